// A CacheIo whose link(2) waits before linking. Only the file tiers publish with link(2),
// so this holds a disk (or ram_file) save in flight, reserved and post-link, for as long
// as a test wants: a fixed delay, or until release() (stuck; 20 s at most, so a failing
// test still ends).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "forwarding_io.h"

namespace hearth::cache::testing {

class SlowLinkIo final : public ForwardingIo {
 public:
  explicit SlowLinkIo(std::chrono::milliseconds wait = std::chrono::seconds(20)) : wait_(wait) {}

  // Lets every waiting and later link(2) through at once.
  void release() {
    {
      std::lock_guard<std::mutex> l(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  // link(2) calls entered so far (waiting or done).
  int linking() {
    std::lock_guard<std::mutex> l(mu_);
    return linking_;
  }

  int link(const std::string& a, const std::string& b) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      ++linking_;
      cv_.wait_for(l, wait_, [&] { return released_; });
    }
    return real->link(a, b);
  }

 private:
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int linking_ = 0;
};

}  // namespace hearth::cache::testing
