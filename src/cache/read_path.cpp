#include "cache/read_path.h"

namespace hearth::cache {

CopyPath CopyPathChooser::choose() {
  if (mode_ == CacheConfig::RamFileRead::kMapped) return CopyPath::kMapped;
  if (mode_ == CacheConfig::RamFileRead::kPread) return CopyPath::kPread;
  std::lock_guard lock(mu_);
  // Probes (a read that fails records nothing, so its path is probed again), pread
  // first: at worst it is the kernel's copy out of tmpfs, where a first mapping's cost
  // is the host's (4.7-8x a memcpy on the PVM guest). With large rows kept mapped, the
  // probes are the first reads of rows found by a restart's scan.
  if (samples_[1] < kProbeReads) return CopyPath::kPread;
  if (samples_[0] < kProbeReads) return CopyPath::kMapped;
  const bool mapped_cheaper = cost_[0] <= cost_[1];
  const bool explore = ++decisions_ % kExploreEvery == 0;
  return mapped_cheaper != explore ? CopyPath::kMapped : CopyPath::kPread;
}

void CopyPathChooser::record(CopyPath path, uint64_t bytes, uint64_t ns) {
  if (bytes == 0) return;
  const int i = static_cast<int>(path);
  const double cost = static_cast<double>(ns) / static_cast<double>(bytes);
  std::lock_guard lock(mu_);
  cost_[i] = samples_[i] == 0 ? cost : cost_[i] + kWeight * (cost - cost_[i]);
  ++samples_[i];
}

double CopyPathChooser::ns_per_byte(CopyPath path) const {
  std::lock_guard lock(mu_);
  return cost_[static_cast<int>(path)];
}

}  // namespace hearth::cache
