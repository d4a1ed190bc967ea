#include "engine/kernels/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

int padded(int in) { return (in + kRowAlign - 1) / kRowAlign * kRowAlign; }

// Reads element (r, c) of a source block as float.
struct SourceRows {
  const float* f32 = nullptr;
  const uint16_t* bf16 = nullptr;
  int in = 0;
  void read_row(int r, float* dst) const {
    if (f32) {
      std::memcpy(dst, f32 + static_cast<size_t>(r) * in, sizeof(float) * in);
    } else {
      bf16_to_f32(bf16 + static_cast<size_t>(r) * in, dst, in);
    }
  }
};

// Packs one source row into destination row `r` of the packed weight.
void pack_row(PackedWeight& w, int r, const SourceRows& src, int src_row, float* tmp) {
  const int in = w.in;
  if (w.format == WeightFormat::bf16 && src.bf16) {  // keep the exact bits
    std::memcpy(w.data.as<uint16_t>() + static_cast<size_t>(r) * w.ld,
                src.bf16 + static_cast<size_t>(src_row) * in, sizeof(uint16_t) * in);
    return;
  }
  src.read_row(src_row, tmp);
  switch (w.format) {
    case WeightFormat::f32:
      std::memcpy(w.data.as<float>() + static_cast<size_t>(r) * w.ld, tmp, sizeof(float) * in);
      break;
    case WeightFormat::bf16:
      f32_to_bf16(tmp, w.data.as<uint16_t>() + static_cast<size_t>(r) * w.ld, in);
      break;
    case WeightFormat::f16:
      f32_to_f16(tmp, w.data.as<uint16_t>() + static_cast<size_t>(r) * w.ld, in);
      break;
    case WeightFormat::int8: {
      float max_abs = 0.0f;
      for (int c = 0; c < in; ++c) max_abs = std::max(max_abs, std::fabs(tmp[c]));
      const float scale = max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
      int8_t* dst = w.data.as<int8_t>() + static_cast<size_t>(r) * w.ld;
      for (int c = 0; c < in; ++c) {
        const float q = std::nearbyint(tmp[c] / scale);
        dst[c] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
      }
      w.scales[r] = scale;
      break;
    }
  }
}

std::unique_ptr<PackedWeight> pack(const std::vector<LinearBlock>& blocks, int in,
                                   WeightFormat format) {
  int out = 0;
  bool any_bias = false;
  for (const auto& block : blocks) {
    if (block.rows < 0 || (block.rows > 0 && !block.weight_f32 && !block.weight_bf16)) {
      throw std::invalid_argument("Linear: a weight block has no data or negative rows");
    }
    out += block.rows;
    any_bias = any_bias || block.bias != nullptr;
  }
  if (out <= 0 || in <= 0) throw std::invalid_argument("Linear: out and in must be positive");
  auto w = std::make_unique<PackedWeight>();
  w->format = format;
  w->isa = active_isa();
  w->use_bf16_dot = format == WeightFormat::bf16 && use_avx512_bf16();
  w->use_int8_dot = format == WeightFormat::int8 && use_avx512_vnni();
  w->out = out;
  w->in = in;
  w->ld = padded(in);
  w->data.resize(static_cast<size_t>(out) * w->ld * w->element_bytes());
  if (format == WeightFormat::int8) w->scales.assign(out, 1.0f);
  if (any_bias) w->bias.assign(out, 0.0f);
  std::vector<float> tmp(in);
  int r = 0;
  for (const auto& block : blocks) {
    const SourceRows src{block.weight_f32, block.weight_bf16, in};
    for (int i = 0; i < block.rows; ++i, ++r) {
      pack_row(*w, r, src, i, tmp.data());
      if (block.bias) w->bias[r] = block.bias[i];
    }
  }
  return w;
}

GemvKernel pick_gemv(const PackedWeight& w) {
  if (w.isa >= Isa::avx512) {
    switch (w.format) {
      case WeightFormat::f32: return gemv_f32_avx512;
      case WeightFormat::f16: return gemv_f16_avx512;
      case WeightFormat::bf16: return w.use_bf16_dot ? gemv_bf16_avx512 : gemv_avx2;
      case WeightFormat::int8: return w.use_int8_dot ? gemv_int8_vnni : gemv_int8_avx512;
    }
  }
  if (w.isa >= Isa::avx2) return gemv_avx2;
  return gemv_scalar;
}

// Per-thread staging of x: padded rows (float or bf16).
AlignedBuffer& x_scratch() {
  thread_local AlignedBuffer buffer;
  return buffer;
}

const void* stage_x(const PackedWeight& w, const float* x, int m) {
  AlignedBuffer& buffer = x_scratch();
  if (w.use_int8_dot) return stage_x_int8(w, x, m, buffer);
  const size_t elem = w.use_bf16_dot ? 2 : 4;
  buffer.resize(static_cast<size_t>(m) * w.ld * elem);
  for (int r = 0; r < m; ++r) {
    const float* src = x + static_cast<size_t>(r) * w.in;
    if (w.use_bf16_dot) {
      uint16_t* dst = buffer.as<uint16_t>() + static_cast<size_t>(r) * w.ld;
      f32_to_bf16(src, dst, w.in);
      std::memset(dst + w.in, 0, sizeof(uint16_t) * (w.ld - w.in));
    } else {
      float* dst = buffer.as<float>() + static_cast<size_t>(r) * w.ld;
      std::memcpy(dst, src, sizeof(float) * w.in);
      std::memset(dst + w.in, 0, sizeof(float) * (w.ld - w.in));
    }
  }
  return buffer.as<void>();
}

constexpr int kRowsPerTask = 16;

// Inputs g .. g+3 of staged x (their rows are contiguous at stride ld).
const void* input_group(const PackedWeight& w, const void* staged, int g, Int8StagedX& header) {
  if (w.use_int8_dot) {
    header = *static_cast<const Int8StagedX*>(staged);
    const size_t blocks = static_cast<size_t>(w.ld) / kInt8Block;
    header.q += static_cast<size_t>(g) * w.ld;
    header.neg_comp += g * blocks;
    header.scale += g * blocks;
    return &header;
  }
  const size_t elem = w.use_bf16_dot ? 2 : 4;
  return static_cast<const char*>(staged) + static_cast<size_t>(g) * w.ld * elem;
}

// More than kGemvMaxRows inputs (the server's decode batch): for a few rows at
// a time, every group of up to four inputs in turn, so the rows come from
// memory once and from cache for the other groups; each input's result is
// the kernel's for that input alone.
void gemv_groups(GemvKernel kernel, const PackedWeight& w, const void* staged, int m, float* y, int rb, int re) {
  Int8StagedX header{};
  for (int r = rb; r < re; r += kRowsPerTask) {
    const int r_end = std::min(re, r + kRowsPerTask);
    for (int g = 0; g < m; g += kGemvMaxRows) {
      kernel(w, input_group(w, staged, g, header), std::min(kGemvMaxRows, m - g),
             y + static_cast<size_t>(g) * w.out, r, r_end);
    }
  }
}

void run_gemv(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool) {
  const GemvKernel kernel = pick_gemv(w);
  const void* staged = stage_x(w, x, m);
  const int tasks = (w.out + kRowsPerTask - 1) / kRowsPerTask;
  // Balanced: a thread that starts late or streams slower hands the rest of
  // its rows to the other instead of making it wait at the end of the call.
  pool.parallel_for_balanced(tasks, [&](int begin, int end) {
    const int rb = begin * kRowsPerTask, re = std::min(w.out, end * kRowsPerTask);
    if (m <= kGemvMaxRows) kernel(w, staged, m, y, rb, re);
    else gemv_groups(kernel, w, staged, m, y, rb, re);
  });
}

}  // namespace

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::f32: return "f32";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::f16: return "f16";
    case WeightFormat::int8: return "int8";
  }
  return "unknown";
}

bool parse_weight_format(const std::string& text, WeightFormat* format) {
  if (text == "f32") *format = WeightFormat::f32;
  else if (text == "bf16") *format = WeightFormat::bf16;
  else if (text == "f16") *format = WeightFormat::f16;
  else if (text == "int8") *format = WeightFormat::int8;
  else return false;
  return true;
}

Linear::Linear() = default;
Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

Linear::Linear(const float* weight, int out, int in, WeightFormat format, const float* bias)
    : packed_(pack({LinearBlock{weight, nullptr, bias, out}}, in, format)) {}

Linear::Linear(const uint16_t* weight_bf16, int out, int in, WeightFormat format, const float* bias)
    : packed_(pack({LinearBlock{nullptr, weight_bf16, bias, out}}, in, format)) {}

Linear::Linear(const std::vector<LinearBlock>& blocks, int in, WeightFormat format)
    : packed_(pack(blocks, in, format)) {}

int Linear::out() const { return packed_ ? packed_->out : 0; }
int Linear::in() const { return packed_ ? packed_->in : 0; }
WeightFormat Linear::format() const { return packed_ ? packed_->format : WeightFormat::f32; }
Isa Linear::isa() const { return packed_ ? packed_->isa : Isa::scalar; }

size_t Linear::weight_bytes() const {
  if (!packed_) return 0;
  return static_cast<size_t>(packed_->out) * packed_->ld * packed_->element_bytes() +
         packed_->scales.size() * sizeof(float);
}

std::string Linear::kernel_name() const {
  if (!packed_) return "empty";
  std::string name = weight_format_name(packed_->format);
  name += '/';
  name += isa_name(packed_->isa);
  if (packed_->use_bf16_dot) name += "-bf16";
  if (packed_->use_int8_dot) name += "-vnni";
  return name;
}

void Linear::forward_gemv(const float* x, int m, float* y, ThreadPool& pool) const {
  if (m > 0) run_gemv(*packed_, x, m, y, pool);
}

void Linear::forward_matmul(const float* x, int m, float* y, ThreadPool& pool) const {
  if (packed_->isa == Isa::scalar || !matmul_onednn(*packed_, x, m, y, pool)) {
    forward_gemv(x, m, y, pool);
  }
}

void Linear::forward(const float* x, int m, float* y, ThreadPool& pool) const {
  if (m <= 0) return;
  if (m <= kGemvMaxRows) forward_gemv(x, m, y, pool);
  else forward_matmul(x, m, y, pool);
}

}  // namespace xft::engine
