// EventFields (engine/runtime.h), the fields of every probe and trace event: it must say what the
// nlohmann::json object built from the same fields says, because that object is what a trace writes
// and hashes and what the checkers read before events were flat. For any sequence of fields set in
// any order, the fields fold into the trace hash as their JSON object does (traces/recorder.h), and
// reading a field by name gives what the object gives, missing and mistyped fields failing alike.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime.h"
#include "traces/recorder.h"

namespace durasim {
namespace {

using json = nlohmann::json;

TEST(EventFields, AnInitializerListKeepsTheFirstOfARepeatedKeyAsTheJsonObjectDoes) {
  const EventFields fields = {{"b", 1}, {"a", "x"}, {"b", 2}};
  const json object = {{"b", 1}, {"a", "x"}, {"b", 2}};
  EXPECT_EQ(fields.to_json(), object);
  EXPECT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields.at("b"), 1);
}

TEST(EventFields, SettingAKeyAgainReplacesItsValue) {
  EventFields fields = {{"a", 1}};
  fields["a"] = "two";
  fields.add("b", 3).add("b", 4);
  EXPECT_EQ(fields.to_json(), json({{"a", "two"}, {"b", 4}}));
}

TEST(EventFields, ReadsFailAsTheJsonObjectsDo) {
  const EventFields fields = {{"n", 5}, {"s", "text"}};
  const json object = fields.to_json();
  EXPECT_THROW((void)fields.at("missing"), json::out_of_range);
  EXPECT_THROW((void)object.at("missing"), json::out_of_range);
  EXPECT_EQ(fields.value("missing", int64_t{7}), object.value("missing", int64_t{7}));
  EXPECT_EQ(fields.value("s", "fallback"), "text");
  EXPECT_THROW((void)fields.value("s", int64_t{0}), json::type_error);
  EXPECT_THROW((void)object.value("s", int64_t{0}), json::type_error);
  EXPECT_TRUE(fields.contains("n"));
  EXPECT_FALSE(fields.contains("N"));
  EXPECT_EQ(fields.find("missing"), nullptr);
  EXPECT_EQ(fields.dump(), object.dump());
}

TEST(EventFields, TakesTheMembersOfAJsonObjectAndRefusesAnythingElse) {
  const json object = {{"z", {1, 2}}, {"a", {{"k", nullptr}}}};
  EXPECT_EQ(EventFields(object).to_json(), object);
  EXPECT_TRUE(EventFields(json()).empty());
  EXPECT_THROW(EventFields(json::array({1})), json::type_error);
  EXPECT_THROW(EventFields(json("text")), json::type_error);
}

// A generated field value, shown by its canonical text (RapidCheck would otherwise print the JSON
// strictly, which a string that is not valid UTF-8 cannot be).
struct Value {
  json body;
};
void showValue(const Value& value, std::ostream& os) { os << traces::canonical_line(value.body); }

// Keys from a small alphabet, so that repeats and shared prefixes are common; values of every type
// the encoding tells apart, including a string that is not valid UTF-8.
rc::Gen<std::string> keys() { return rc::gen::container<std::string>(rc::gen::elementOf(std::string("ab_Z. \"\\\x01\x7f\xc3"))); }
rc::Gen<json> scalars() {
  return rc::gen::oneOf(rc::gen::just(json()), rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) { return json(b); }),
                        rc::gen::map(rc::gen::arbitrary<int64_t>(), [](int64_t i) { return json(i); }),
                        rc::gen::map(rc::gen::arbitrary<uint64_t>(), [](uint64_t u) { return json(u); }),
                        rc::gen::map(rc::gen::arbitrary<double>(), [](double d) { return json(d); }),
                        rc::gen::map(keys(), [](const std::string& s) { return json(s); }));
}
rc::Gen<Value> values() {
  const auto array = rc::gen::map(rc::gen::container<std::vector<json>>(scalars()), [](std::vector<json> items) { return json(std::move(items)); });
  const auto object = rc::gen::map(rc::gen::container<std::vector<std::pair<std::string, json>>>(rc::gen::pair(keys(), scalars())), [](const auto& members) {
    json built = json::object();
    for (const auto& [key, value] : members) built[key] = value;
    return built;
  });
  return rc::gen::map(rc::gen::oneOf(scalars(), array, object), [](json v) { return Value{std::move(v)}; });
}

RC_GTEST_PROP(EventFields, FoldIntoTheTraceHashAsTheirJsonObject, ()) {
  // Up to 100 fields set (repeats among them): beyond 32 the encoder takes its general path.
  const auto sets = *rc::gen::container<std::vector<std::pair<std::string, Value>>>(rc::gen::pair(keys(), values()));
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EventFields fields;
  json object = json::object();
  for (const auto& [key, value] : sets) {
    fields[key] = value.body;
    object[key] = value.body;
  }
  // Compared as canonical text: a NaN equals nothing, itself included.
  RC_ASSERT(traces::canonical_line(fields.to_json()) == traces::canonical_line(object));
  RC_ASSERT(traces::canonical_fields_line(fields) == traces::canonical_line(object));
  RC_ASSERT(traces::fold_event(seed, fields) == traces::fold_event(seed, object));
  for (const auto& [key, value] : sets) RC_ASSERT(traces::canonical_line(fields.at(key)) == traces::canonical_line(object.at(key)));
}

TEST(EventFields, ASharedValueReadsAsItsValueAndAWriteTakesACopy) {
  const auto shared = std::make_shared<const json>(json({{"shard-1", {{"observedAt", 5}}}, {"shard-2", nullptr}}));
  EventFields fields = EventFields{{"push", 1}}.share("observed", shared);
  fields["z"] = 2;  // fields added after it, and the vector grown, leave it where it is
  const json object = {{"push", 1}, {"observed", *shared}, {"z", 2}};
  EXPECT_EQ(&fields.at("observed"), shared.get());  // read in place, not copied
  EXPECT_EQ(fields.to_json(), object);
  EXPECT_EQ(fields.dump(), object.dump());
  EXPECT_EQ(traces::canonical_fields_line(fields), traces::canonical_line(object));
  EXPECT_EQ(traces::fold_event(9, fields), traces::fold_event(9, object));
  for (const EventFields::Field& field : fields) EXPECT_EQ(fields.read(field), object.at(field.key));

  const EventFields copy = fields;  // copies share the value too
  EXPECT_EQ(&copy.at("observed"), shared.get());
  fields["observed"]["shard-3"] = 7;  // a write goes to the field's own copy
  EXPECT_EQ(*shared, object.at("observed"));
  EXPECT_EQ(copy.to_json(), object);
  EXPECT_EQ(fields.at("observed").size(), 3u);
  EXPECT_NE(&fields.at("observed"), shared.get());

  fields.share("observed", shared).share("push", shared);  // shared again, and a second field
  EXPECT_EQ(&fields.at("observed"), shared.get());
  EXPECT_EQ(&fields.at("push"), shared.get());
  fields.add("observed", 0);  // setting a plain value drops the shared one
  EXPECT_EQ(fields.at("observed"), 0);
  EXPECT_EQ(&fields.at("push"), shared.get());
  EXPECT_EQ(fields.to_json(), json({{"push", *shared}, {"observed", 0}, {"z", 2}}));
}

TEST(EventFields, ManyFieldsFoldAsTheirJsonObject) {
  EventFields fields;
  for (int i = 40; i > 0; --i) fields["k" + std::to_string(i)] = i;
  EXPECT_EQ(traces::fold_event(3, fields), traces::fold_event(3, fields.to_json()));
  EXPECT_EQ(traces::canonical_fields_line(fields), traces::canonical_line(fields.to_json()));
}

}  // namespace
}  // namespace durasim
