// The engine's CUDA runtime surface, as plain C++17 host code with no CUDA header, so
// the engine's C++20 sources call it without nvcc. Compiled (cuda_api.cu) only when the
// build has CUDA (HEARTH_CUDA=ON defines HEARTH_HAVE_CUDA); nothing outside
// src/engine/cuda and the engine's GPU glue (engine/model/gpu_layers.*) includes it.
//
// Errors are text naming the failed call and the CUDA error ("" is success), turned
// into Status by the glue: this header stays free of hearth/status.h (C++20).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hearth::engine::cuda {

using Error = std::string;

// Whether device `device` can be used; else why not (no driver, no such device, a
// driver older than the runtime), in words.
bool available(int device, std::string* why_not);
int device_count();  // 0 when there is no driver or no device
Error set_device(int device);

struct DeviceProps {
  std::string name;  // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_mem = 0;
  size_t l2_bytes = 0;
};
Error device_props(int device, DeviceProps* out);

// A CUDA stream (non-blocking); every launch and copy of the engine goes on one.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Error create();
  void* handle() const { return handle_; }  // cudaStream_t
  Error sync() const;                       // waits for everything queued on it

 private:
  void* handle_ = nullptr;
};

// The allocators under DeviceBuffer and PinnedBuffer: device memory (cudaMalloc) and
// page-locked host memory (cudaMallocHost). *p is null on error.
Error device_alloc(void** p, size_t bytes);
void device_free(void* p);
Error pinned_alloc(void** p, size_t bytes);
void pinned_free(void* p);

// Owned memory from one of those allocators; moves, never copies.
template <Error (*Alloc)(void**, size_t), void (*Free)(void*)>
class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  ~OwnedBuffer() { reset(); }
  OwnedBuffer(OwnedBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  OwnedBuffer& operator=(OwnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_;
      bytes_ = o.bytes_;
      o.data_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  // Frees what it held first; contents unspecified.
  Error allocate(size_t bytes) {
    reset();
    if (bytes == 0) return {};
    Error e = Alloc(&data_, bytes);
    if (e.empty()) bytes_ = bytes;
    return e;
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void reset() {
    if (data_ != nullptr) Free(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory.
using DeviceBuffer = OwnedBuffer<device_alloc, device_free>;
// Page-locked host memory: copies from and to it run at the link's peak and
// asynchronously.
using PinnedBuffer = OwnedBuffer<pinned_alloc, pinned_free>;

// Asynchronous copies on `stream` (host memory that is not pinned makes them synchronous).
Error copy_to_device(void* dst, const void* src, size_t bytes, const Stream& stream);
Error copy_to_host(void* dst, const void* src, size_t bytes, const Stream& stream);
Error copy_on_device(void* dst, const void* src, size_t bytes, const Stream& stream);
Error fill_device(void* dst, int byte, size_t bytes, const Stream& stream);
// `height` runs of `width` bytes, src_pitch apart at src and dst_pitch apart at dst, in
// any direction (host or device pointers, told apart by unified addressing); one call.
Error copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
              size_t height, const Stream& stream);

// After a kernel launch: the launch's error (bad configuration, no kernel image for this
// device), as "<what>: <CUDA error>", or "".
Error launch_error(const char* what);

// A captured sequence of launches on a stream, replayed with one call (CUDA graphs): a
// decode step's few hundred small kernels cost one launch's overhead. Capture records the
// launches and copies made between begin_capture and end_capture without running them;
// the buffers they name must stay valid and their arguments unchanged between replays.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Error begin_capture(const Stream& stream);
  // Ends the capture and instantiates it; on error the stream is out of capture mode and
  // the graph is not ready.
  Error end_capture(const Stream& stream);
  bool ready() const { return exec_ != nullptr; }
  Error launch(const Stream& stream) const;

 private:
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

// Elapsed device time between two points of a stream, for benchmarks.
class Timer {
 public:
  Timer() = default;
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  Error start(const Stream& stream);
  // Waits for the stream to reach the stop point; milliseconds since start().
  Error stop(const Stream& stream, float* ms);

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace hearth::engine::cuda
