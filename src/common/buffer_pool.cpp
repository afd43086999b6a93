#include "common/buffer_pool.h"

#include <bit>

namespace hearth {
namespace {

// n rounded up to a multiple of an eighth of the power of two above it: at most 1/4
// more than n.
size_t with_headroom(size_t n) {
  if (n < 8) return n;
  const size_t step = size_t{1} << (std::bit_width(n) - 3);
  return (n + step - 1) / step * step;
}

}  // namespace

std::vector<uint8_t> BufferPool::take(size_t n) {
  if (n >= kMinPooledBytes) {
    std::unique_lock lock(mu_);
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if (it->capacity() >= n && (best == idle_.end() || it->capacity() < best->capacity()))
        best = it;
    if (best != idle_.end()) {
      std::vector<uint8_t> v = std::move(*best);
      idle_.erase(best);
      idle_bytes_ -= v.capacity();
      ++reused_;
      lock.unlock();
      v.resize(n);  // no writes when it held at least n bytes before
      return v;
    }
    ++allocated_;
  }
  std::vector<uint8_t> v;
  v.reserve(with_headroom(n));
  v.resize(n);
  return v;
}

void BufferPool::give(std::vector<uint8_t> v) {
  if (v.capacity() < kMinPooledBytes || v.capacity() > max_bytes_) return;
  std::vector<std::vector<uint8_t>> dropped;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    idle_bytes_ += v.capacity();
    idle_.push_back(std::move(v));
    while (idle_bytes_ > max_bytes_) {
      idle_bytes_ -= idle_.front().capacity();
      dropped.push_back(std::move(idle_.front()));
      idle_.pop_front();
    }
  }
}

size_t BufferPool::idle_bytes() const {
  std::lock_guard lock(mu_);
  return idle_bytes_;
}

size_t BufferPool::idle_buffers() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

uint64_t BufferPool::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}

uint64_t BufferPool::allocated() const {
  std::lock_guard lock(mu_);
  return allocated_;
}

BufferPool& payload_buffers() {
  // Never destroyed: rows released during static destruction still give back.
  static BufferPool* pool = new BufferPool(size_t{1} << 30);
  return *pool;
}

}  // namespace hearth
