// Bounds how many generations run at once and how many may wait. A request that
// finds both full is turned away at once (HTTP 429 with Retry-After) instead of
// piling up threads and memory behind a saturated model.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace hearth::server {

class Admission {
 public:
  Admission(int64_t max_running, int64_t max_queued);

  // Holding a Ticket is permission to run one generation.
  class Ticket {
   public:
    explicit Ticket(Admission& owner) : owner_(owner) {}
    ~Ticket() { owner_.release(); }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    Admission& owner_;
  };

  // Waits for a slot; nullptr when the queue is full or admission is closed.
  std::unique_ptr<Ticket> acquire();
  // Wakes every waiter with a refusal; later acquires fail (shutdown).
  void close();

  int64_t running() const;
  int64_t queued() const;

 private:
  void release();

  const int64_t max_running_;
  const int64_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t running_ = 0;
  int64_t queued_ = 0;
  bool closed_ = false;
};

}  // namespace hearth::server
