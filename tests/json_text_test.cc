// parseJson (engine/json_text.h) against nlohmann::json::parse, which it must equal on every text:
// the same value with the same type at every node (a non-negative integer unsigned, a negative one
// signed), or the same exception. Texts come from random values dumped compactly and indented, from
// the stored envelopes the engine writes, and from random edits of both (cuts, inserted and replaced
// bytes), so the subset's boundaries (floats, escapes, UTF-8, leading zeros, 19-digit integers,
// repeated keys, trailing bytes) are crossed from both sides. deserialize, which reads the stored
// envelope's value through the same reader, must give what the envelope's "value" gives.
// jsonStringArray, appendJsonText and appendJsonString must write the text nlohmann::json's dump
// writes for the same value (or throw its exception).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/conventions.h"
#include "engine/json_text.h"

namespace durasim {
namespace {

using json = nlohmann::json;

// Equal values of equal types at every node (json's operator== takes 1u and 1 for equal).
bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case json::value_t::array:
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
      return true;
    case json::value_t::object: {
      if (a.size() != b.size()) return false;
      auto x = a.begin();
      for (auto y = b.begin(); y != b.end(); ++x, ++y)
        if (x.key() != y.key() || !same(x.value(), y.value())) return false;
      return true;
    }
    default:
      return a == b;
  }
}

struct Outcome {
  std::optional<json> value;
  int error_id = 0;
  std::string error;
};

template <class Parse>
Outcome outcome(const std::string& text, Parse parse) {
  Outcome o;
  try {
    o.value = parse(text);
  } catch (const json::exception& e) {
    o.error_id = e.id;
    o.error = e.what();
  }
  return o;
}

// Asserts that parseJson and nlohmann read `text` alike.
void agrees(const std::string& text) {
  const Outcome fast = outcome(text, [](const std::string& t) { return parseJson(t); });
  const Outcome reference = outcome(text, [](const std::string& t) { return json::parse(t); });
  RC_ASSERT(fast.value.has_value() == reference.value.has_value());
  if (reference.value) {
    RC_ASSERT(same(*fast.value, *reference.value));
  } else {
    RC_ASSERT(fast.error_id == reference.error_id);
    RC_ASSERT(fast.error == reference.error);
  }
}

void expectAgrees(const std::string& text) {
  const Outcome fast = outcome(text, [](const std::string& t) { return parseJson(t); });
  const Outcome reference = outcome(text, [](const std::string& t) { return json::parse(t); });
  ASSERT_EQ(fast.value.has_value(), reference.value.has_value()) << text;
  if (reference.value) {
    EXPECT_TRUE(same(*fast.value, *reference.value)) << text << " read as " << fast.value->dump();
  } else {
    EXPECT_EQ(fast.error, reference.error) << text;
  }
}

// Strings drawn mostly from the characters stored text holds, sometimes from any byte.
rc::Gen<std::string> genText() {
  return rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::elementOf(std::string("abcXYZ019 _-:/.{}[],\"\\\t\x7f"))),
                        rc::gen::string<std::string>());
}

// A JSON value of what `gen` gives (rc::gen::construct would brace-initialise: a one-element array).
template <class T>
rc::Gen<json> toJson(rc::Gen<T> gen) {
  return rc::gen::map(std::move(gen), [](T v) { return json(std::move(v)); });
}

rc::Gen<json> genScalar() {
  return rc::gen::weightedOneOf<json>({
      {2, toJson(rc::gen::arbitrary<int64_t>())},
      {2, toJson(rc::gen::inRange<int64_t>(-1000, 1000))},
      {1, toJson(rc::gen::arbitrary<uint64_t>())},
      {1, toJson(rc::gen::elementOf(std::vector<int64_t>{0, 9, 10, 99'999'999'999'999'999, 100'000'000'000'000'000,
                                                                          999'999'999'999'999'999, 1'000'000'000'000'000'000,
                                                                          -999'999'999'999'999'999, std::numeric_limits<int64_t>::min(),
                                                                          std::numeric_limits<int64_t>::max()}))},
      {1, toJson(rc::gen::arbitrary<double>())},
      {1, toJson(rc::gen::arbitrary<bool>())},
      {1, rc::gen::just(json(nullptr))},
      {3, toJson(genText())},
  });
}

rc::Gen<json> genValue(int depth) {
  if (depth >= 4) return genScalar();
  const auto inner = rc::gen::lazy([depth] { return genValue(depth + 1); });
  const auto count = rc::gen::inRange<std::size_t>(0, 6);  // small containers: the nesting multiplies them
  return rc::gen::weightedOneOf<json>({
      {6, genScalar()},
      {2, rc::gen::mapcat(count, [inner](std::size_t n) {
         return rc::gen::map(rc::gen::container<std::vector<json>>(n, inner), [](std::vector<json> items) { return json(std::move(items)); });
       })},
      {2, rc::gen::map(rc::gen::mapcat(count, [inner](std::size_t n) {
                         return rc::gen::container<std::vector<std::pair<std::string, json>>>(n, rc::gen::pair(genText(), inner));
                       }),
                       [](std::vector<std::pair<std::string, json>> members) {
                         json object = json::object();
                         for (auto& [key, value] : members) object[key] = std::move(value);
                         return object;
                       })},
  });
}

// The text of a value as the engine stores it, as nlohmann dumps it compactly, or indented.
std::string textOf(const json& v, int form) {
  if (form == 0) {
    if (const std::optional<std::string> stored = serialize(v)) return *stored;
  }
  return v.dump(form == 2 ? 2 : -1, ' ', false, json::error_handler_t::replace);
}

RC_GTEST_PROP(ParseJson, ReadsTheTextOfAnyValueAsNlohmannDoes, ()) {
  const json v = *genValue(0);
  agrees(textOf(v, *rc::gen::inRange(0, 3)));
}

// `text` after one to three random edits: a byte inserted or replaced, or the text cut short.
std::string edited(std::string text) {
  const int edits = *rc::gen::inRange(1, 4);
  for (int i = 0; i < edits; ++i) {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, text.size() + 1);
    const char byte = *rc::gen::oneOf(rc::gen::elementOf(std::string("0123456789-.eE+\"\\,:[]{} \nabtrufnlvX\x80\xc3")), rc::gen::arbitrary<char>());
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        text.insert(at, 1, byte);
        break;
      case 1:
        if (at < text.size()) text[at] = byte;
        break;
      default:
        text.resize(at);
        break;
    }
  }
  return text;
}

RC_GTEST_PROP(ParseJson, ReadsAnyEditedTextAsNlohmannDoes, ()) { agrees(edited(textOf(*genValue(0), *rc::gen::inRange(0, 3)))); }

// deserialize reads what serialize wrote without building its envelope: it must give what the
// envelope's "value" gives, for stored texts and for any edit of them.
RC_GTEST_PROP(ParseJson, DeserializeGivesTheEnvelopesValue, ()) {
  std::string text = textOf(*genValue(0), 0);
  if (*rc::gen::arbitrary<bool>()) text = edited(text);
  const Outcome fast = outcome(text, [](const std::string& t) { return deserialize(t); });
  const Outcome reference = outcome(text, [](const std::string& t) { return json::parse(t).at("value"); });
  RC_ASSERT(fast.value.has_value() == reference.value.has_value());
  if (reference.value) RC_ASSERT(same(*fast.value, *reference.value));
  else RC_ASSERT(fast.error == reference.error);
}

TEST(ParseJson, DeserializeReadsTheEnvelopesEdgesAsNlohmannDoes) {
  for (const char* text : {R"({"kind":"value","value":12})", R"({"kind":"value","value":12])", R"({"kind":"value","value":12}})",
                           R"({"kind":"value","value":12} )", R"({"kind":"value","value": 12 })", R"({"kind":"value","value":})",
                           R"({"kind":"value","valuX":12})", R"({"kind":"value","value":1,"x":2})", R"({"kind":"value","value":1.5})",
                           R"({"kind":"value","value":"a"})", R"({"kind":"value","value":{"a":[1,-2,null]}})", R"({"kind":"value","value")",
                           R"({"kind":"value"})"}) {
    const Outcome fast = outcome(text, [](const std::string& t) { return deserialize(t); });
    const Outcome reference = outcome(text, [](const std::string& t) { return json::parse(t).at("value"); });
    ASSERT_EQ(fast.value.has_value(), reference.value.has_value()) << text;
    if (reference.value) EXPECT_TRUE(same(*fast.value, *reference.value)) << text;
    else EXPECT_EQ(fast.error, reference.error) << text;
  }
}

TEST(ParseJson, ReadsTheSubsetsBoundariesAsNlohmannDoes) {
  for (const char* text :
       {"0", "-0", "7", "-7", "01", "-01", "00", "999999999999999999", "-999999999999999999", "1000000000000000000", "-1000000000000000000",
        "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809", "1.5", "1e3", "1E3", "-", "+1", "1 2",
        "12a", "truex", "true", "false", "null", "nul", "\"\"", "\"a\\\"b\"", "\"\\u00e9\"", "\"\xc3\xa9\"", "\"\x7f\"", "\"tab\there\"", "\"\x01\"",
        "[]", "[ ]", "[1,]", "[,1]", "[1 , 2 ]", "{}", "{ }", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "{\"b\":1,\"a\":[true,{\"c\":null}]}",
        "{\"a\" : 1 }", " \n\t\r{\"k\":\"v\"} \n", "{\"k\":\"v\"}x", "", " ", "\xef\xbb\xbf{}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "{\"kind\":\"value\",\"value\":{\"seq\":12,\"at\":1700000000000}}"})
    expectAgrees(text);
  expectAgrees(std::string("\"a\0b\"", 5));
  expectAgrees(std::string("[1,\0]", 5));
}

// Strings are scanned eight bytes at a time: a byte that ends the run (the closing quote, a byte
// outside the subset, or 0x7F, which the subset keeps but the word test stops at) at each position
// of strings long enough to cross a word or two, inside an array and as an object's key.
TEST(ParseJson, ReadsAStringsBytesAtEveryPositionOfItsWordsAsNlohmannDoes) {
  for (const char special : {'"', '\\', '\x01', '\x1f', '\x7f', '\x80', '\xff', ' ', '~', 'a'}) {
    for (std::size_t length = 0; length <= 20; ++length) {
      for (std::size_t at = 0; at <= length; ++at) {
        std::string s(length, 'x');
        if (at < length) s[at] = special;
        expectAgrees("\"" + s + "\"");
        const bool inSubset = at == length || special == ' ' || special == '~' || special == 'a' || special == '\x7f';
        EXPECT_EQ(parseJsonSubset("\"" + s + "\"").has_value(), inSubset) << "byte " << int(special) << " at " << at << " of " << length;
        expectAgrees("[\"" + s + "\",1]");
        expectAgrees("{\"" + s + "\":\"" + s + "\"}");
        expectAgrees("\"" + s);  // unterminated
      }
    }
  }
}

// Keys the engine writes come sorted; any other order, and a repeated key, read as nlohmann reads
// them.
TEST(ParseJson, ReadsObjectKeysInAnyOrderAsNlohmannDoes) {
  for (const char* text : {"{\"a\":1,\"b\":2,\"c\":3}", "{\"c\":1,\"b\":2,\"a\":3}", "{\"b\":1,\"c\":2,\"a\":3}",
                           "{\"a\":1,\"c\":2,\"b\":3}", "{\"a\":1,\"b\":2,\"a\":3}", "{\"b\":1,\"a\":2,\"b\":3}",
                           "{\"ab\":1,\"a\":2,\"abc\":3,\"\":4}"})
    expectAgrees(text);
}

// What `write` returns, or the message and id of the exception it throws.
template <class Write>
std::pair<std::string, int> textOrError(const Write& write) {
  try {
    return {write(), 0};
  } catch (const json::exception& e) {
    return {e.what(), e.id};
  }
}

// jsonStringArray(items) against json::array(items).dump(): the same text, or the same exception.
void expectSameArrayText(std::initializer_list<std::string_view> items) {
  json array = json::array();
  for (const std::string_view item : items) array.push_back(std::string(item));
  const auto fast = textOrError([&] { return jsonStringArray(items); });
  const auto reference = textOrError([&] { return array.dump(); });
  RC_ASSERT(fast == reference);
}

RC_GTEST_PROP(JsonStringArray, WritesWhatDumpWrites, ()) {
  // Printable ASCII (the direct path, quotes and backslashes included) or any bytes (the fallback).
  const auto item = rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::inRange<char>(0x20, 0x7F)), rc::gen::arbitrary<std::string>());
  const std::string x = *item, y = *item, z = *item;
  expectSameArrayText({});
  expectSameArrayText({x});
  expectSameArrayText({x, y});
  expectSameArrayText({x, y, z});
}

TEST(JsonStringArray, WritesTheEdgesAsDumpDoes) {
  for (const char* item : {"", "a", "a\"b", "a\\b", "\x1f", " ", "~", "\x7f", "\x80", "\xc3\xa9", "\xff", "\xc3", "tab\there", "[\"k\",\"t\"]"})
    for (const char* other : {"", "t", "\xff"}) {
      json array = json::array({item, other});
      std::string expected;
      try {
        expected = array.dump();
      } catch (const json::exception& e) {
        EXPECT_THROW(jsonStringArray({item, other}), json::type_error) << item;
        continue;
      }
      EXPECT_EQ(jsonStringArray({item, other}), expected) << item;
    }
  EXPECT_EQ(jsonStringArray({std::string_view("a\0b", 3)}), json::array({std::string("a\0b", 3)}).dump());
}

// appendJsonText(v) against v.dump(-1, ' ', false, handler) after the same text: the same text, or
// the same exception. appendJsonString likewise for a string.
std::pair<std::string, int> written(const json& v, json::error_handler_t handler) {
  return textOrError([&] {
    std::string out = "[0,";
    if (v.is_string()) {
      appendJsonString(out, v.get_ref<const std::string&>(), handler);
      out += ',';
    }
    appendJsonText(out, v, handler);
    return out;
  });
}
std::pair<std::string, int> dumped(const json& v, json::error_handler_t handler) {
  return textOrError([&] {
    const std::string text = v.dump(-1, ' ', false, handler);
    return "[0," + (v.is_string() ? text + "," : "") + text;
  });
}

constexpr json::error_handler_t kHandlers[] = {json::error_handler_t::strict, json::error_handler_t::replace, json::error_handler_t::ignore};

RC_GTEST_PROP(AppendJsonText, WritesWhatDumpWrites, ()) {
  const json v = *genValue(0);
  for (const json::error_handler_t handler : kHandlers) RC_ASSERT(written(v, handler) == dumped(v, handler));
}

TEST(AppendJsonText, WritesTheEdgesAsDumpDoes) {
  std::vector<json> values{json(), true, false, 0, -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<uint64_t>::max(),
                           0.5, -0.0, std::numeric_limits<double>::infinity(), json::array(), json::object(), json::binary({1, 2})};
  for (const char* text : {"", "a", "a\"b", "a\\b", "\x1f", " ", "~", "\x7f", "\x80", "\xc3\xa9", "\xff", "\xc3", "tab\there"}) {
    values.emplace_back(text);
    values.push_back(json::object({{text, 1}, {"k", text}}));
    values.push_back(json::array({1, text, json::array({text})}));
  }
  values.emplace_back(std::string("a\0b", 3));
  // Every position of strings up to three words long, holding each kind of byte at the edges of
  // what is written as it is (the writer tests eight bytes at a time).
  for (std::size_t length = 1; length <= 24; ++length)
    for (std::size_t at = 0; at < length; ++at)
      for (const char c : {'\x00', '\x1f', ' ', '!', '"', '#', '[', '\\', ']', '~', '\x7f', '\x80', '\xc3', '\xff'}) {
        std::string text(length, 'a');
        text[at] = c;
        values.emplace_back(text);
      }
  // Deeper than the writer's own nesting (64): the rest goes to dump.
  json deep = json::array({"leaf", 1.5, "\xff"});
  for (int i = 0; i < 100; ++i) {
    std::string key = "k";  // not "k" + std::to_string(i): GCC 12 warns of an overlap there (-Wrestrict)
    key += std::to_string(i);
    deep = i % 2 ? json::array({i, std::move(deep)}) : json::object({{key, std::move(deep)}});
  }
  values.push_back(deep);
  values.push_back(json(json::value_t::discarded));
  for (const json& v : values)
    for (const json::error_handler_t handler : kHandlers) EXPECT_EQ(written(v, handler), dumped(v, handler)) << dumped(v, json::error_handler_t::replace).first;
}

}  // namespace
}  // namespace durasim
