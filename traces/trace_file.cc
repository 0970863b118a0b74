// Writing and validating trace files; see trace_file.h.
#include "traces/trace_file.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace durasim::traces {
namespace {

constexpr std::size_t kChoicesPerLine = 4096;
constexpr const char* kFormatName = "durasim-trace";

bool is_unsigned(const nlohmann::json& j) { return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0); }

uint64_t parse_hash(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string() || j.get<std::string>().size() != 16) throw TraceError(where + ": hash must be 16 hex digits");
  const std::string text = j.get<std::string>();
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c)))
      throw TraceError(where + ": hash must be 16 lower-case hex digits");
  return std::stoull(text, nullptr, 16);
}

// Validates lines one at a time, in the order the format requires.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  void line(const std::string& raw) {
    ++number_;
    if (done_) fail("text after the end record");
    nlohmann::json j;
    try {
      j = parse_bounded_json(raw);
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
    if (j.is_discarded()) fail("not valid JSON");
    if (!j.is_object()) fail("expected a JSON object");
    if (number_ == 1) return header(j);
    if (j.contains("ev")) return event(j, raw);  // an event may carry any other field name
    if (j.contains("streams")) return streams(j);
    if (j.contains("choices")) return choices(j);
    if (j.contains("checkpoint")) return checkpoint(j);
    if (j.contains("end")) return end(j);
    fail("not a trace line (no \"ev\", \"streams\", \"choices\", \"checkpoint\" or \"end\")");
  }

  TraceFile finish() {
    if (number_ == 0) throw TraceError(name_ + ": empty file, not a durasim trace");
    if (!done_) throw TraceError(name_ + ": truncated after line " + std::to_string(number_) + ": no end record");
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(name_ + ": line " + std::to_string(number_) + ": " + what);
  }

  void header(const nlohmann::json& j) {
    if (!j.contains("format") || j["format"] != nlohmann::json(kFormatName)) fail("not a durasim trace (no \"format\":\"durasim-trace\" header)");
    if (!j.contains("version") || !j["version"].is_number_integer()) fail("header has no integer version");
    if (j["version"].get<int64_t>() != kTraceFormatVersion)
      fail("unsupported trace format version " + j["version"].dump() + " (this build reads version " +
           std::to_string(kTraceFormatVersion) + "; replay it with a build that reads it)");
    if (!j.contains("seed") || !is_unsigned(j["seed"])) fail("header seed must be an unsigned integer");
    if (!j.contains("config") || !j["config"].is_object()) fail("header config must be an object");
    trace_.seed = j["seed"].get<uint64_t>();
    trace_.config = j["config"];
  }

  void streams(const nlohmann::json& j) {
    if (seen_streams_ || in_events_) fail("stream table out of place");
    if (!j["streams"].is_array()) fail("streams must be an array of strings");
    for (const auto& name : j["streams"]) {
      if (!name.is_string()) fail("streams must be an array of strings");
      trace_.choices.streams.push_back(name.get<std::string>());
    }
    seen_streams_ = true;
  }

  void choices(const nlohmann::json& j) {
    if (!seen_streams_ || in_events_) fail("choices out of place (they follow the stream table, before events)");
    if (!j["choices"].is_array()) fail("choices must be an array");
    for (const auto& c : j["choices"]) {
      if (!c.is_array() || c.size() != 3 || !is_unsigned(c[0]) || !is_unsigned(c[1]) || !is_unsigned(c[2]))
        fail("each choice must be [stream, bound, value] of unsigned integers");
      sim::Choice choice{static_cast<uint32_t>(c[0].get<uint64_t>()), c[1].get<uint64_t>(), c[2].get<uint64_t>()};
      if (c[0].get<uint64_t>() >= trace_.choices.streams.size()) fail("choice names an unknown stream");
      if (choice.bound == 1 || (choice.bound != 0 && choice.value >= choice.bound)) fail("choice value out of its bound");
      trace_.choices.choices.push_back(choice);
    }
  }

  void event(const nlohmann::json& j, const std::string& raw) {
    if (!seen_streams_) fail("event before the stream table");
    if (!j["ev"].is_string() || !j.contains("t") || !j["t"].is_number_integer())
      fail("not a trace event (needs string \"ev\" and integer \"t\")");
    if (canonical_line(j) != raw) fail("event is not in canonical form (the file was edited)");
    in_events_ = true;
    hash_ = fold_event(hash_, j);
    trace_.events.push_back(raw);
    trace_.event_hashes.push_back(hash_);
    trace_.event_line_numbers.push_back(number_);
  }

  void checkpoint(const nlohmann::json& j) {
    const nlohmann::json& c = j["checkpoint"];
    if (!c.is_object() || !c.contains("events") || !is_unsigned(c["events"]) || !c.contains("hash"))
      fail("checkpoint needs events and hash");
    const uint64_t hash = parse_hash(c["hash"], name_ + ": line " + std::to_string(number_));
    if (c["events"].get<uint64_t>() != trace_.events.size()) fail("checkpoint event count does not match the events before it");
    if (hash != hash_) fail("running hash mismatch: the events before this checkpoint were altered");
    trace_.checkpoints.push_back({trace_.events.size(), hash});
  }

  void end(const nlohmann::json& j) {
    const nlohmann::json& e = j["end"];
    if (!seen_streams_) fail("end record before the stream table");
    if (!e.is_object() || !e.contains("events") || !e.contains("choices") || !e.contains("hash") ||
        !is_unsigned(e["events"]) || !is_unsigned(e["choices"]))
      fail("end record needs events, choices and hash");
    if (e["events"].get<uint64_t>() != trace_.events.size()) fail("end record counts " + e["events"].dump() + " events, the file holds " + std::to_string(trace_.events.size()));
    if (e["choices"].get<uint64_t>() != trace_.choices.choices.size()) fail("end record counts " + e["choices"].dump() + " choices, the file holds " + std::to_string(trace_.choices.choices.size()));
    const uint64_t hash = parse_hash(e["hash"], name_ + ": line " + std::to_string(number_));
    if (hash != hash_) fail("final hash mismatch: recorded " + hash_hex(hash) + ", events hash to " + hash_hex(hash_));
    trace_.hash = hash;
    done_ = true;
  }

  std::string name_;
  uint64_t number_ = 0;
  bool seen_streams_ = false, in_events_ = false, done_ = false;
  uint64_t hash_ = kTraceHashStart;
  TraceFile trace_;
};

}  // namespace

nlohmann::json parse_bounded_json(const std::string& text, int max_depth) {
  using Event = nlohmann::json::parse_event_t;
  bool too_deep = false;
  // Past the bound every value is discarded as it is read, so nothing deep is ever built.
  const auto keep = [&](int depth, Event event, const nlohmann::json&) {
    if (depth >= max_depth && (event == Event::object_start || event == Event::array_start)) too_deep = true;
    return !too_deep;
  };
  nlohmann::json j = nlohmann::json::parse(text, keep, /*allow_exceptions=*/false);
  if (too_deep) throw std::invalid_argument("JSON nested deeper than " + std::to_string(max_depth) + " levels");
  return j;
}

void write_trace(const std::string& path, const TraceFile& trace) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw TraceError(path + ": cannot write the trace file");
    out << canonical_line({{"format", kFormatName}, {"version", kTraceFormatVersion}, {"seed", trace.seed}, {"config", trace.config}}) << '\n';
    out << canonical_line({{"streams", trace.choices.streams}}) << '\n';
    const auto& all = trace.choices.choices;
    for (std::size_t begin = 0; begin < all.size(); begin += kChoicesPerLine) {
      nlohmann::json chunk = nlohmann::json::array();
      for (std::size_t i = begin; i < std::min(all.size(), begin + kChoicesPerLine); ++i)
        chunk.push_back({all[i].stream, all[i].bound, all[i].value});
      out << canonical_line({{"choices", chunk}}) << '\n';
    }
    std::size_t next_checkpoint = 0;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      out << trace.events[i] << '\n';
      if (next_checkpoint < trace.checkpoints.size() && trace.checkpoints[next_checkpoint].events == i + 1) {
        const Checkpoint& c = trace.checkpoints[next_checkpoint++];
        out << canonical_line({{"checkpoint", {{"events", c.events}, {"hash", hash_hex(c.hash)}}}}) << '\n';
      }
    }
    out << canonical_line({{"end", {{"events", trace.events.size()}, {"choices", all.size()}, {"hash", hash_hex(trace.hash)}}}}) << '\n';
    out.flush();
    if (!out) throw TraceError(path + ": writing the trace file failed");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw TraceError(path + ": cannot move the trace file into place");
  }
}

TraceFile parse_trace(const std::string& text, const std::string& name) {
  Reader reader(name);
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) reader.line(raw);
  return reader.finish();
}

TraceFile load_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open the trace file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_trace(buffer.str(), path);
}

}  // namespace durasim::traces
