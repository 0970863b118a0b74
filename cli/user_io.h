// The files and numbers a user hands the command line, checked so that bad input gets one line
// naming the problem (and exit code 2) instead of a misleading message further on: an input file
// that is missing, a directory or empty; an output file that cannot be created; a number that is not
// an unsigned integer or does not fit in 64 bits (CLI11 would wrap "-1" and saturate
// 99999999999999999999).
#pragma once

#include <fstream>
#include <memory>
#include <string>

namespace CLI {
class Validator;  // <CLI/CLI.hpp>: only the files that build the parser pay for the whole library
}

namespace durasim::cli {

// Throws std::invalid_argument "PATH: no such file", "PATH: is a directory, not a file", "PATH: is
// empty" or "PATH: cannot be read".
void require_input_file(const std::string& path);

// `path` opened for writing (truncated); throws std::invalid_argument "PATH: cannot be written".
std::unique_ptr<std::ofstream> open_output(const std::string& path);
// For a command that writes `path` only when its work is done: throws std::invalid_argument "PATH:
// cannot be written" now if it could not be, without truncating what is there (a missing file is
// created empty).
void require_writable_output(const std::string& path);
// Closes `out` when it is open; throws std::invalid_argument "PATH: cannot be written" when what was
// written did not all reach the file (a full disk).
void close_output(std::unique_ptr<std::ofstream>& out, const std::string& path);
// `text` written to `path` (truncated), as open_output and close_output do; the same exception.
void write_output(const std::string& path, const std::string& text);

// A CLI11 check: the option's text is an unsigned decimal integer below 2^64.
const CLI::Validator& unsigned_integer();

}  // namespace durasim::cli
