// Errors the runtime raises through the port (runtime.md 4.4, 4.5, 6.2, 9.3, 10) and the project's
// RangeError / TypeError, whose name() strings match the reference library (scheduler.md 1).
// Runtime errors are never wrapped by capability code: each one means "outcome uncertain".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace durasim {

// Base of every library error (errors-and-contract.md 2): name() is the class name.
class DurabilityError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual std::string name() const { return "DurabilityError"; }
};

class RangeError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "RangeError"; }
};

class TypeError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "TypeError"; }
};

// Base of the errors raised by the runtime itself.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual std::string name() const = 0;
};

// A statement failed; it had no effect, the transaction and the object continue (runtime.md 4.4).
class SqlError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
  std::string name() const override { return "SqlError"; }
};

// A critical storage error: the open implicit transaction is rolled back, storage is poisoned, the
// output gate breaks and the incarnation resets at its next suspension point (runtime.md 4.4).
class SqlCriticalError : public RuntimeError {
 public:
  enum class Code { full, ioerr, nomem, interrupt };
  SqlCriticalError(Code code, std::string message) : RuntimeError(std::move(message)), code_(code) {}
  std::string name() const override { return "SqlCriticalError"; }
  Code code() const { return code_; }

 private:
  Code code_;
};

// A local commit failed (definite) or its confirmation failed (uncertain) (runtime.md 4.5).
class StorageCommitError : public RuntimeError {
 public:
  enum class Outcome { definite, uncertain };
  explicit StorageCommitError(Outcome outcome)
      : RuntimeError(outcome == Outcome::definite
                         ? "Durable Object storage commit failed: the transaction was rolled back"
                         : "Durable Object storage commit failed: durability unknown"),
        outcome_(outcome) {}
  std::string name() const override { return "StorageCommitError"; }
  Outcome outcome() const { return outcome_; }

 private:
  Outcome outcome_;
};

// Storage touched by an incarnation that has been replaced (runtime.md 6.3).
class ObjectResetError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
  std::string name() const override { return "ObjectResetError"; }
};

// An RPC failed (runtime.md 9.3); the flags say what the caller may conclude.
class RpcError : public RuntimeError {
 public:
  enum class Kind { disconnected, overloaded, reset, remote };
  struct Flags {
    bool retryable = false, overloaded = false, durableObjectReset = false, remote = false;
  };
  RpcError(Kind kind, Flags flags, std::string message) : RuntimeError(std::move(message)), kind_(kind), flags_(flags) {}
  std::string name() const override { return "RpcError"; }
  Kind kind() const { return kind_; }
  bool retryable() const { return flags_.retryable; }
  bool overloaded() const { return flags_.overloaded; }
  bool durableObjectReset() const { return flags_.durableObjectReset; }
  bool remote() const { return flags_.remote; }
  const Flags& flags() const { return flags_; }

 private:
  Kind kind_;
  Flags flags_;
};

// A cold-store request failed (runtime.md 10).
class ColdError : public RuntimeError {
 public:
  ColdError(int64_t status, bool retryable, std::string message)
      : RuntimeError(std::move(message)), status_(status), retryable_(retryable) {}
  std::string name() const override { return "ColdError"; }
  int64_t status() const { return status_; }
  bool retryable() const { return retryable_; }

 private:
  int64_t status_;
  bool retryable_;
};

}  // namespace durasim
