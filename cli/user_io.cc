// Command-line files and numbers; see user_io.h.
#include "cli/user_io.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace durasim::cli {

void require_input_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) throw std::invalid_argument(path + ": no such file");
  if (fs::is_directory(status)) throw std::invalid_argument(path + ": is a directory, not a file");
  if (!std::ifstream(path, std::ios::binary)) throw std::invalid_argument(path + ": cannot be read");
  if (fs::is_regular_file(status) && fs::file_size(path, error) == 0) throw std::invalid_argument(path + ": is empty");
}

std::unique_ptr<std::ofstream> open_output(const std::string& path) {
  auto out = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
  if (!*out) throw std::invalid_argument(path + ": cannot be written");
  return out;
}

void require_writable_output(const std::string& path) {
  if (!std::ofstream(path, std::ios::binary | std::ios::app)) throw std::invalid_argument(path + ": cannot be written");
}

void close_output(std::unique_ptr<std::ofstream>& out, const std::string& path) {
  if (!out) return;
  out->close();
  if (out->fail()) throw std::invalid_argument(path + ": cannot be written");
}

void write_output(const std::string& path, const std::string& text) {
  std::unique_ptr<std::ofstream> out = open_output(path);
  *out << text;
  close_output(out, path);
}

const CLI::Validator& unsigned_integer() {
  static const CLI::Validator validator(
      [](const std::string& text) -> std::string {
        const std::string max = "18446744073709551615";
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) return "'" + text + "' is not an unsigned integer";
        const std::string trimmed = text.substr(std::min(text.find_first_not_of('0'), text.size() - 1));
        if (trimmed.size() > max.size() || (trimmed.size() == max.size() && trimmed > max))
          return "'" + text + "' is out of range (at most " + max + ")";
        return "";
      },
      "UINT");
  return validator;
}

}  // namespace durasim::cli
