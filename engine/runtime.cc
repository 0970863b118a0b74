// Out-of-line pieces of the port's value types (EventFields, SqlRow, SqlCursor); see runtime.h.
#include "engine/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace durasim {

EventFields::EventFields(std::initializer_list<Field> fields) {
  fields_.reserve(fields.size() + 4);  // room for the header the host adds (object, incarnation, ev, t)
  for (const Field& field : fields)
    if (!find(field.key)) fields_.emplace_back(field.key, std::move(field.value));
}

EventFields::EventFields(const nlohmann::json& object) { take(nlohmann::json(object)); }

EventFields::EventFields(nlohmann::json&& object) { take(std::move(object)); }

void EventFields::take(nlohmann::json&& object) {
  if (object.is_null()) return;
  if (!object.is_object())
    throw nlohmann::json::type_error::create(305, "cannot use operator[] with a string argument with " + std::string(object.type_name()), &object);
  auto& members = object.get_ref<nlohmann::json::object_t&>();
  fields_.reserve(members.size() + 4);
  for (auto& [key, value] : members) fields_.emplace_back(key, std::move(value));
}

namespace {
template <class Word>
Word load(const char* at) {
  Word word;
  std::memcpy(&word, at, sizeof word);
  return word;
}

// Keys are short and mostly differ in length: of equal lengths, compared in place a word at a
// time, the last word overlapping the one before when the length is not a multiple of it.
bool same_key(const std::string& a, std::string_view b) {
  const std::size_t n = b.size();
  if (a.size() != n) return false;
  const char* x = a.data();
  const char* y = b.data();
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8)
      if (load<uint64_t>(x + i) != load<uint64_t>(y + i)) return false;
    return load<uint64_t>(x + n - 8) == load<uint64_t>(y + n - 8);
  }
  if (n >= 4) return load<uint32_t>(x) == load<uint32_t>(y) && load<uint32_t>(x + n - 4) == load<uint32_t>(y + n - 4);
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return false;
  return true;
}
}  // namespace

nlohmann::json* EventFields::find_mutable(std::string_view key) {
  for (Field& field : fields_) {
    if (!same_key(field.key, key)) continue;
    if (!shared_.empty()) {  // written to: a shared value becomes the field's own copy
      const std::size_t index = static_cast<std::size_t>(&field - fields_.data());
      const auto it = std::find_if(shared_.begin(), shared_.end(), [&](const Shared& s) { return s.index == index; });
      if (it != shared_.end()) {
        field.value = *it->value;
        shared_.erase(it);
      }
    }
    return &field.value;
  }
  return nullptr;
}

const nlohmann::json* EventFields::find(std::string_view key) const {
  for (const Field& field : fields_)
    if (same_key(field.key, key)) return &read(field);
  return nullptr;
}

const nlohmann::json& EventFields::read_shared(const Field& field) const {
  const std::size_t index = static_cast<std::size_t>(&field - fields_.data());
  for (const Shared& s : shared_)
    if (s.index == index) return *s.value;
  return field.value;
}

EventFields& EventFields::share(std::string_view key, std::shared_ptr<const nlohmann::json> value) & {
  (*this)[key] = nullptr;  // the field, its own value dropped (and any earlier shared value with it)
  std::size_t index = 0;
  while (!same_key(fields_[index].key, key)) ++index;
  shared_.push_back({index, std::move(value)});
  return *this;
}

nlohmann::json& EventFields::operator[](std::string_view key) {
  if (nlohmann::json* found = find_mutable(key)) return *found;
  // Fields built one by one grow by more than the vector's doubling from one: an event has a few
  // fields of its own and the four of its header.
  if (fields_.size() == fields_.capacity()) fields_.reserve(std::max<std::size_t>(8, 2 * fields_.size()));
  return fields_.emplace_back(key, nullptr).value;
}

const nlohmann::json& EventFields::at(std::string_view key) const {
  if (const nlohmann::json* found = find(key)) return *found;
  throw nlohmann::json::out_of_range::create(403, "key '" + std::string(key) + "' not found", nullptr);
}

nlohmann::json EventFields::to_json() const {
  nlohmann::json object(nlohmann::json::value_t::object);
  auto& members = object.get_ref<nlohmann::json::object_t&>();
  for (const Field& field : fields_) members.emplace(field.key, read(field));
  return object;
}

const SqlValue& SqlRow::at(std::string_view column) const {
  for (std::size_t i = 0; i < columns_->size(); ++i)
    if (same_key((*columns_)[i], column)) return values_[i];
  throw SqlError("no such column in result: " + std::string(column));
}

namespace {
template <class T>
const T& typed(const SqlValue& value, std::string_view column, const char* type) {
  if (const T* v = std::get_if<T>(&value)) return *v;
  throw SqlError("column " + std::string(column) + " is not " + type);
}
}  // namespace

int64_t SqlRow::int64(std::string_view column) const { return typed<int64_t>(at(column), column, "an INTEGER"); }

double SqlRow::real(std::string_view column) const {
  const SqlValue& value = at(column);
  if (const int64_t* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return typed<double>(value, column, "a REAL");
}

const std::string& SqlRow::text(std::string_view column) const { return typed<std::string>(at(column), column, "TEXT"); }

const std::string& SqlRow::blob(std::string_view column) const { return typed<SqlBlob>(at(column), column, "a BLOB").bytes; }

std::optional<int64_t> SqlRow::optInt64(std::string_view column) const {
  if (isNull(column)) return std::nullopt;
  return int64(column);
}

std::optional<std::string> SqlRow::optText(std::string_view column) const {
  if (isNull(column)) return std::nullopt;
  return text(column);
}

SqlRow SqlCursor::one() {
  if (rows_.size() - position_ != 1)
    throw SqlError("expected exactly one row, got " + std::to_string(rows_.size() - position_));
  return std::move(rows_[position_++]);
}

const std::vector<std::string>& SqlCursor::columnNames() const {
  static const std::vector<std::string> kNone;
  return columns_ ? *columns_ : kNone;
}

}  // namespace durasim
