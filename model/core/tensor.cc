#include "model/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace transerve {
namespace {

constexpr size_t kCpuAlignment = 64;  // one cache line; also AVX-512 friendly

void* CpuAllocate(size_t bytes) {
  const size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  return std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
}
void CpuFree(void* ptr) { std::free(ptr); }

DeviceAllocator& AllocatorFor(Device device) {
  static DeviceAllocator allocators[2] = {{CpuAllocate, CpuFree}, {}};
  return allocators[static_cast<int>(device)];
}

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
      return 1;
  }
  return 4;
}

std::string_view DeviceName(Device device) { return device == Device::kCpu ? "cpu" : "cuda"; }

void RegisterAllocator(Device device, DeviceAllocator allocator) {
  AllocatorFor(device) = allocator;
}

Buffer::Buffer(Device device, size_t bytes) : device_(device), bytes_(bytes) {
  const DeviceAllocator& allocator = AllocatorFor(device);
  if (allocator.allocate == nullptr) {
    throw std::runtime_error("no allocator registered for device " +
                             std::string(DeviceName(device)));
  }
  data_ = allocator.allocate(bytes);
  if (data_ == nullptr) {
    throw OutOfMemoryError("out of memory on " + std::string(DeviceName(device)) + " allocating " +
                           std::to_string(bytes) + " bytes");
  }
}

Buffer::~Buffer() { AllocatorFor(device_).free(data_); }

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor::Tensor(std::vector<int64_t> shape, DType dtype, Device device)
    : shape_(std::move(shape)), numel_(NumElements(shape_)), dtype_(dtype), device_(device) {
  buffer_ = std::make_shared<Buffer>(device, static_cast<size_t>(numel_) * DTypeSize(dtype));
}

Tensor Tensor::FromFloats(std::vector<int64_t> shape, std::span<const float> values) {
  Tensor t(std::move(shape));
  if (static_cast<size_t>(t.numel()) != values.size()) {
    throw std::invalid_argument("Tensor::FromFloats: shape " + t.ShapeString() + " does not hold " +
                                std::to_string(values.size()) + " values");
  }
  if (!values.empty()) std::memcpy(t.f32(), values.data(), values.size_bytes());
  return t;
}

Tensor Tensor::FromInts(std::vector<int64_t> shape, std::span<const int32_t> values) {
  Tensor t(std::move(shape), DType::kInt32);
  if (static_cast<size_t>(t.numel()) != values.size()) {
    throw std::invalid_argument("Tensor::FromInts: shape " + t.ShapeString() + " does not hold " +
                                std::to_string(values.size()) + " values");
  }
  if (!values.empty()) std::memcpy(t.data<int32_t>(), values.data(), values.size_bytes());
  return t;
}

int64_t Tensor::dim(int axis) const {
  if (axis < 0) axis += rank();
  return shape_.at(static_cast<size_t>(axis));
}

std::string Tensor::ShapeString() const {
  return absl::StrCat("[", absl::StrJoin(shape_, ", "), "]");
}

Tensor Tensor::Reshape(std::vector<int64_t> shape) const {
  if (NumElements(shape) != numel_) {
    throw std::invalid_argument("Tensor::Reshape: " + ShapeString() + " has " +
                                std::to_string(numel_) + " elements");
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0]) {
    throw std::out_of_range("Tensor::Rows out of range for " + ShapeString());
  }
  Tensor t = *this;
  const int64_t row_elements = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  t.offset_bytes_ += static_cast<size_t>(begin * row_elements) * DTypeSize(dtype_);
  t.shape_[0] = end - begin;
  t.numel_ = (end - begin) * row_elements;
  return t;
}

void Tensor::Resize(std::vector<int64_t> shape) {
  const int64_t n = NumElements(shape);
  const size_t needed = static_cast<size_t>(n) * DTypeSize(dtype_);
  if (buffer_ == nullptr || capacity_bytes() < needed) {
    // Grow geometrically so a slowly growing batch does not reallocate every step.
    const size_t grown = std::max(needed, capacity_bytes() + capacity_bytes() / 2);
    buffer_ = std::make_shared<Buffer>(device_, grown);
    offset_bytes_ = 0;
  }
  shape_ = std::move(shape);
  numel_ = n;
}

std::vector<float> Tensor::ToFloatVector() const {
  if (device_ != Device::kCpu || dtype_ != DType::kFloat32) {
    throw std::logic_error("Tensor::ToFloatVector needs a float32 CPU tensor");
  }
  return std::vector<float>(f32(), f32() + numel_);
}

}  // namespace transerve
