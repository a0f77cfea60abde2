// The one tensor type of the engine: dtype, device, shape and shared storage.
// Every tier speaks in Tensors; raw pointers only appear inside device implementations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace transerve {

// kFloat16: IEEE half, for weights stored on a GPU (docs/cuda.md); the CPU computes in float32.
// kInt8 and kBFloat16 hold the packed weights of low-precision CPU models (PackMatrix).
enum class DType : uint8_t { kFloat32, kInt32, kFloat16, kBFloat16, kInt8 };
enum class Device : uint8_t { kCpu, kCuda };

size_t DTypeSize(DType dtype);
std::string_view DeviceName(Device device);

// A device (or host) allocation failed. Callers answer RESOURCE_EXHAUSTED: less work at once may
// still fit.
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The device is broken for good (a CUDA "sticky" error, such as a kernel's illegal address):
// every later call, allocations included, would fail the same way until the process restarts.
// Callers stop using it (the Translator answers UNAVAILABLE from then on).
class DeviceLostError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Owns one device allocation. Allocation goes through the device's allocator; throws
// OutOfMemoryError when it fails.
class Buffer {
 public:
  Buffer(Device device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Device device_;
  size_t bytes_;
  void* data_;
};

// Device allocators are pluggable so the CUDA backend can register itself without the core
// knowing CUDA.
struct DeviceAllocator {
  void* (*allocate)(size_t bytes) = nullptr;
  void (*free)(void* ptr) = nullptr;
};
void RegisterAllocator(Device device, DeviceAllocator allocator);

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised contiguous storage.
  explicit Tensor(std::vector<int64_t> shape, DType dtype = DType::kFloat32,
                  Device device = Device::kCpu);

  static Tensor FromFloats(std::vector<int64_t> shape, std::span<const float> values);
  static Tensor FromInts(std::vector<int64_t> shape, std::span<const int32_t> values);

  bool empty() const { return buffer_ == nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Negative axes count from the end, as in PyTorch.
  int64_t dim(int axis) const;
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  std::string ShapeString() const;

  template <typename T>
  T* data() {
    if (buffer_ == nullptr) return nullptr;
    return reinterpret_cast<T*>(static_cast<char*>(buffer_->data()) + offset_bytes_);
  }
  template <typename T>
  const T* data() const {
    if (buffer_ == nullptr) return nullptr;
    return reinterpret_cast<const T*>(static_cast<const char*>(buffer_->data()) + offset_bytes_);
  }
  float* f32() { return data<float>(); }
  const float* f32() const { return data<float>(); }

  // Same storage, another shape with the same element count.
  Tensor Reshape(std::vector<int64_t> shape) const;
  // Rows [begin, end) of the first axis, sharing storage.
  Tensor Rows(int64_t begin, int64_t end) const;
  // Changes the shape, reallocating only when the storage is too small: scratch buffers of the
  // decode loop keep their memory from step to step.
  void Resize(std::vector<int64_t> shape);
  // Bytes of storage held (capacity, not the view's size).
  size_t capacity_bytes() const { return buffer_ ? buffer_->bytes() - offset_bytes_ : 0; }

  std::vector<float> ToFloatVector() const;

 private:
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kFloat32;
  Device device_ = Device::kCpu;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_bytes_ = 0;
};

int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace transerve
