// A runtime cache with a disk tier whose publishes (link(2)) each wait: a fixed delay, or
// until released. Async saves of a Tier::kDisk model then stay in flight that long, which
// is how the resume tests hold a finish save unpublished (through the cache's I/O layer,
// not a production knob).
#pragma once

#include <chrono>
#include <memory>

#include "cache/slow_link_io.h"
#include "cache/test_util.h"
#include "hearth/runtime/runtime.h"

namespace hearth::runtime::testing {

class SlowDisk {
 public:
  // Default: stuck until release() (20 s at most).
  explicit SlowDisk(std::chrono::milliseconds delay = std::chrono::seconds(20))
      : io_(std::make_shared<cache::testing::SlowLinkIo>(delay)) {}

  RuntimeOptions options() const {
    RuntimeOptions o;
    o.cache.disk_dir = dir_.sub("disk");
    o.cache.io = io_;
    return o;
  }
  cache::testing::SlowLinkIo& io() { return *io_; }

  // Declared after the runtime, lets the disk go before the runtime's shutdown waits on it
  // (a test that fails half-way then ends at once).
  struct ReleaseAtExit {
    SlowDisk* disk;
    ~ReleaseAtExit() { disk->io_->release(); }
  };
  [[nodiscard]] ReleaseAtExit release_at_exit() { return ReleaseAtExit{this}; }

 private:
  cache::testing::TempDir dir_;
  std::shared_ptr<cache::testing::SlowLinkIo> io_;
};

}  // namespace hearth::runtime::testing
