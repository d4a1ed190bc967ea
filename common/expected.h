// Errors as values: a minimal stand-in for C++23 std::expected, so that inner
// code returns failures and only the command layer turns them into exits.
// The error type defaults to Error (a message); code that must tell failures
// apart uses its own (remote::Remote<T> = Expected<T, RemoteError>).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace xft {

struct Error {
  std::string message;
};

template <class T, class E = Error>
class Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(E error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, E> state_;
};

template <class E>
class Expected<void, E> {
 public:
  Expected() = default;
  Expected(E error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const { return error_; }

 private:
  E error_;
  bool ok_ = true;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace xft
