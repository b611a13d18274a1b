#pragma once

// The request bodies an HTTP server holds at once, across all its connections: each
// connection may hold one body of up to max_body_bytes while it arrives and while a worker
// answers it, so without a total a crowd of connections sending large bodies slowly could
// hold max_connections x max_body_bytes of memory.

#include <atomic>
#include <cstddef>
#include <utility>

namespace coach::server {

class BodyBudget {
 public:
  // Bytes held on behalf of one request; given back when it is destroyed (the request
  // answered or its connection closed). Move-only; an empty one holds nothing.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept
        : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    Reservation& operator=(Reservation&& other) noexcept {
      if (this != &other) {
        Release();
        budget_ = std::exchange(other.budget_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
      }
      return *this;
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { Release(); }

    void Release() {
      if (budget_ != nullptr) budget_->used_.fetch_sub(bytes_);
      budget_ = nullptr;
      bytes_ = 0;
    }

   private:
    friend class BodyBudget;
    Reservation(BodyBudget* budget, size_t bytes) : budget_(budget), bytes_(bytes) {}
    BodyBudget* budget_ = nullptr;
    size_t bytes_ = 0;
  };

  // `limit` 0: no bound.
  explicit BodyBudget(size_t limit) : limit_(limit) {}

  // `bytes` held until the reservation goes, or false when the budget cannot hold them now.
  bool Reserve(size_t bytes, Reservation* out) {
    size_t used = used_.load();
    do {
      if (limit_ != 0 && (bytes > limit_ || used > limit_ - bytes)) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes));
    *out = Reservation(this, bytes);
    return true;
  }

  size_t used() const { return used_.load(); }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

}  // namespace coach::server
