// A persistent fork-join pool for the compute kernels.
//
// Threads are created once. parallel_for splits [0, n) into size() contiguous
// chunks (chunk i = [n*i/size, n*(i+1)/size)), runs chunk 0 on the calling thread
// and the others on the workers, and returns when all are done. A dispatch
// allocates nothing: the callable is passed by address through a plain function
// pointer trampoline. Workers spin briefly for the next job, then block; while the
// machine's CPUs are contended (other processes waiting to run) they block at once,
// see spin_iterations_for.
//
// The chunking is a pure function of (n, size()), which callers may rely on; the
// matmul invariance argument does not need it (work is split by output rows).
// fn must not throw. parallel_for is not reentrant and must be called from one
// thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace hearth::engine {

// Polling iterations before a waiting thread blocks, given the CPU pressure: the share
// (0-100) of the last 10 s during which some runnable task waited for a CPU (Linux PSI
// `some avg10`), or a negative value when unknown. On a contended machine a spinning
// thread burns the time slice that the thread it waits for needs, and a fork-join step
// then costs a scheduler tick (on two cores shared with busy builds: 40-240x slower
// decode of a small model); a blocked thread is woken promptly instead.
int spin_iterations_for(double cpu_pressure_pct);

class ThreadPool {
 public:
  // n_threads counts the caller: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  template <class F>
  void parallel_for(int64_t n, F&& fn) {
    if (n <= 0) return;
    if (size_ == 1 || n == 1) {
      fn(int64_t{0}, n);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(
        n, 0, [](void* ctx, int64_t begin, int64_t end) { (*static_cast<Fn*>(ctx))(begin, end); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Like parallel_for, but threads take [i, i + grain) ranges from a shared counter
  // until none is left, so a thread that is slower (a busy core, a late wake-up)
  // simply takes fewer. Which thread runs which range is not fixed: fn must not
  // depend on it (matmul's outputs do not).
  template <class F>
  void parallel_for_dynamic(int64_t n, int64_t grain, F&& fn) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (size_ == 1 || n <= grain) {
      fn(int64_t{0}, n);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(
        n, grain,
        [](void* ctx, int64_t begin, int64_t end) { (*static_cast<Fn*>(ctx))(begin, end); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Trampoline = void (*)(void*, int64_t, int64_t);

  // grain 0: static chunks (chunk i on thread i); else dynamic ranges of `grain`.
  void run(int64_t n, int64_t grain, Trampoline call, void* ctx);
  void worker_loop(int index);
  void run_chunk(int index);

  int size_;
  std::vector<std::thread> workers_;

  // The current job (written by the caller before bumping generation_).
  Trampoline call_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 0;
  std::atomic<int64_t> next_{0};  // dynamic mode: the first range not yet taken

  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
};

}  // namespace hearth::engine
