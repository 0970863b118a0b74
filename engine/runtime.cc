// Out-of-line pieces of the port's value types (SqlRow, SqlCursor); see runtime.h.
#include "engine/runtime.h"

namespace durasim {

const SqlValue& SqlRow::at(std::string_view column) const {
  for (std::size_t i = 0; i < columns_->size(); ++i)
    if ((*columns_)[i] == column) return values_[i];
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
  return rows_[position_++];
}

}  // namespace durasim
