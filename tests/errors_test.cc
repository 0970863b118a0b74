// Library error classes (errors-and-contract.md 2): exact messages and name() strings, serializeError
// (2.1) over every kind of thrown value and its empty-name/empty-message rules, and isNonRetryable (2.2).
#include <gtest/gtest.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "engine/errors.h"

namespace durasim {
namespace {

template <class E>
std::exception_ptr thrown(E e) {
  return std::make_exception_ptr(std::move(e));
}

// An application error deriving from NonRetryableError keeps its own name.
class PaymentDeclined : public NonRetryableError {
 public:
  PaymentDeclined() : NonRetryableError("card declined") {}
  std::string name() const override { return "PaymentDeclined"; }
};

// Not derived from NonRetryableError, but calls itself one (errors-and-contract.md 2.2).
class NamedNonRetryable : public DurabilityError {
 public:
  NamedNonRetryable() : DurabilityError("named so") {}
  std::string name() const override { return "NonRetryableError"; }
};

class EmptyName : public DurabilityError {
 public:
  explicit EmptyName(const std::string& message) : DurabilityError(message) {}
  std::string name() const override { return ""; }
};

class ThrowingName : public DurabilityError {
 public:
  ThrowingName() : DurabilityError("name throws") {}
  std::string name() const override { throw std::runtime_error("no name"); }
};

struct NotAnException {
  int code;
};

// ---------------------------------------------------------------------------------------------
// Messages and names

TEST(Errors, MessagesAndNamesAreExact) {
  const MigrationError migration("Unknown durability migration target");
  EXPECT_EQ(migration.name(), "MigrationError");
  EXPECT_STREQ(migration.what(), "Unknown durability migration target");

  const NonRetryableError nonRetryable("stop now");
  EXPECT_EQ(nonRetryable.name(), "NonRetryableError");
  EXPECT_STREQ(nonRetryable.what(), "stop now");

  const DurableAlarmTimeoutError timeout("daily-report", 30000);
  EXPECT_EQ(timeout.name(), "DurableAlarmTimeoutError");
  EXPECT_STREQ(timeout.what(), "Durable alarm \"daily-report\" timed out after 30000ms");
  EXPECT_EQ(timeout.alarmName(), "daily-report");
  EXPECT_EQ(timeout.timeoutMs(), 30000);

  const DurableRetryPolicyError policy("durable alarm \"x\"", nullptr);
  EXPECT_EQ(policy.name(), "DurableRetryPolicyError");
  EXPECT_STREQ(policy.what(), "Retry policy for durable alarm \"x\" must produce a non-negative safe-integer timestamp");
  EXPECT_EQ(policy.label(), "durable alarm \"x\"");
  EXPECT_EQ(policy.cause(), nullptr);

  const DurableRetryPolicyError fanout("fanout target \"t1\"", nullptr);
  EXPECT_STREQ(fanout.what(), "Retry policy for fanout target \"t1\" must produce a non-negative safe-integer timestamp");

  const DurableAttemptsExhaustedError exhausted("sync", 5);
  EXPECT_EQ(exhausted.name(), "DurableAttemptsExhaustedError");
  EXPECT_STREQ(exhausted.what(), "Durable alarm \"sync\" exhausted its 5 attempts");
  EXPECT_EQ(exhausted.alarmName(), "sync");
  EXPECT_EQ(exhausted.maxAttempts(), 5);
}

TEST(Errors, EveryLibraryErrorIsADurabilityError) {
  EXPECT_THROW(throw MigrationError("m"), DurabilityError);
  EXPECT_THROW(throw NonRetryableError("n"), DurabilityError);
  EXPECT_THROW(throw DurableAlarmTimeoutError("a", 1), DurabilityError);
  EXPECT_THROW(throw DurableRetryPolicyError("l", nullptr), DurabilityError);
  EXPECT_THROW(throw DurableAttemptsExhaustedError("a", 1), DurabilityError);
  EXPECT_THROW(throw PaymentDeclined(), NonRetryableError);
}

TEST(Errors, RetryPolicyErrorCarriesTheThrownCause) {
  const std::exception_ptr cause = thrown(std::invalid_argument("bad delay"));
  const DurableRetryPolicyError error("fanout target \"t\"", cause);
  ASSERT_EQ(error.cause(), cause);
  try {
    std::rethrow_exception(error.cause());
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad delay");
  }
}

// ---------------------------------------------------------------------------------------------
// serializeError

TEST(SerializeError, NullIsErrorNull) { EXPECT_EQ(serializeError(nullptr), (ErrorInfo{"Error", "null"})); }

TEST(SerializeError, LibraryErrorsReportNameAndMessage) {
  EXPECT_EQ(serializeError(thrown(DurableAlarmTimeoutError("a", 250))),
            (ErrorInfo{"DurableAlarmTimeoutError", "Durable alarm \"a\" timed out after 250ms"}));
  EXPECT_EQ(serializeError(thrown(RangeError("limit must be a positive integer"))),
            (ErrorInfo{"RangeError", "limit must be a positive integer"}));
  EXPECT_EQ(serializeError(thrown(TypeError("Leases require the leases option"))),
            (ErrorInfo{"TypeError", "Leases require the leases option"}));
  EXPECT_EQ(serializeError(thrown(PaymentDeclined())), (ErrorInfo{"PaymentDeclined", "card declined"}));
  EXPECT_EQ(serializeError(thrown(DurabilityError("base"))), (ErrorInfo{"DurabilityError", "base"}));
}

TEST(SerializeError, RuntimeErrorsReportTheirOwnName) {
  EXPECT_EQ(serializeError(thrown(StorageCommitError(StorageCommitError::Outcome::uncertain))),
            (ErrorInfo{"StorageCommitError", "Durable Object storage commit failed: durability unknown"}));
  EXPECT_EQ(serializeError(thrown(SqlError("no such table: t: SQLITE_ERROR"))),
            (ErrorInfo{"SqlError", "no such table: t: SQLITE_ERROR"}));
  EXPECT_EQ(serializeError(thrown(RpcError(RpcError::Kind::disconnected, {}, "Network connection lost."))),
            (ErrorInfo{"RpcError", "Network connection lost."}));
}

TEST(SerializeError, OtherStdExceptionsAreError) {
  EXPECT_EQ(serializeError(thrown(std::runtime_error("boom"))), (ErrorInfo{"Error", "boom"}));
  EXPECT_EQ(serializeError(thrown(std::out_of_range("index"))), (ErrorInfo{"Error", "index"}));
}

TEST(SerializeError, ThrownStringsAreTheirText) {
  EXPECT_EQ(serializeError(thrown(std::string("plain string"))), (ErrorInfo{"Error", "plain string"}));
  const char* literal = "a literal";
  EXPECT_EQ(serializeError(thrown(literal)), (ErrorInfo{"Error", "a literal"}));
  std::exception_ptr fromThrow;
  try {
    throw "thrown literal";
  } catch (...) {
    fromThrow = std::current_exception();
  }
  EXPECT_EQ(serializeError(fromThrow), (ErrorInfo{"Error", "thrown literal"}));
}

TEST(SerializeError, AnythingElseIsAnUnknownThrownValue) {
  EXPECT_EQ(serializeError(thrown(42)), (ErrorInfo{"Error", "Unknown thrown value"}));
  EXPECT_EQ(serializeError(thrown(NotAnException{7})), (ErrorInfo{"Error", "Unknown thrown value"}));
}

TEST(SerializeError, EmptyNameAndEmptyMessageAreReplaced) {
  EXPECT_EQ(serializeError(thrown(EmptyName("has a message"))), (ErrorInfo{"Error", "has a message"}));
  EXPECT_EQ(serializeError(thrown(EmptyName(""))), (ErrorInfo{"Error", "Unknown thrown value"}));
  EXPECT_EQ(serializeError(thrown(NonRetryableError(""))), (ErrorInfo{"NonRetryableError", "Unknown thrown value"}));
  EXPECT_EQ(serializeError(thrown(std::runtime_error(""))), (ErrorInfo{"Error", "Unknown thrown value"}));
  EXPECT_EQ(serializeError(thrown(std::string())), (ErrorInfo{"Error", "Unknown thrown value"}));
  EXPECT_EQ(serializeError(thrown(static_cast<const char*>(nullptr))), (ErrorInfo{"Error", "Unknown thrown value"}));
}

TEST(SerializeError, NeverThrowsEvenWhenNameThrows) {
  static_assert(noexcept(serializeError(nullptr)));
  EXPECT_EQ(serializeError(thrown(ThrowingName())), (ErrorInfo{"Error", "name throws"}));
}

// ---------------------------------------------------------------------------------------------
// isNonRetryable

TEST(IsNonRetryable, NonRetryableErrorAndItsSubclasses) {
  EXPECT_TRUE(isNonRetryable(thrown(NonRetryableError("stop"))));
  EXPECT_TRUE(isNonRetryable(thrown(PaymentDeclined())));  // derived, even with another name()
}

TEST(IsNonRetryable, ADurabilityErrorNamedNonRetryableError) {
  EXPECT_TRUE(isNonRetryable(thrown(NamedNonRetryable())));
}

TEST(IsNonRetryable, EverythingElseIsRetryable) {
  EXPECT_FALSE(isNonRetryable(nullptr));
  EXPECT_FALSE(isNonRetryable(thrown(DurableAlarmTimeoutError("a", 1))));
  EXPECT_FALSE(isNonRetryable(thrown(DurabilityError("NonRetryableError"))));  // the message does not count
  EXPECT_FALSE(isNonRetryable(thrown(std::runtime_error("NonRetryableError"))));
  EXPECT_FALSE(isNonRetryable(thrown(std::string("NonRetryableError"))));
  EXPECT_FALSE(isNonRetryable(thrown(StorageCommitError(StorageCommitError::Outcome::definite))));
  EXPECT_FALSE(isNonRetryable(thrown(42)));
  EXPECT_FALSE(isNonRetryable(thrown(ThrowingName())));
}

}  // namespace
}  // namespace durasim
