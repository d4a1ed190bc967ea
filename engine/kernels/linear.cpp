#include "engine/kernels/linear.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/kernels/amx_linear.h"
#include "engine/kernels/fp8.h"
#include "engine/kernels/linear_internal.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/quant_int4.h"

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
    case WeightFormat::int4: break;  // packed by pack_int4
    case WeightFormat::fp8: break;   // packed by pack_fp8
    case WeightFormat::int8: {
      float max_abs = 0.0f;
      for (int c = 0; c < in; ++c) max_abs = std::max(max_abs, std::fabs(tmp[c]));
      const float scale = max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
      for (int c = 0; c < in; ++c) {
        const float q = std::nearbyint(tmp[c] / scale);
        const int8_t value = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
        if (w.int8_tiled) w.data.as<uint8_t>()[int8_tiled_offset(w, r, c)] = static_cast<uint8_t>(value + 128);
        else w.data.as<int8_t>()[static_cast<size_t>(r) * w.ld + c] = value;
      }
      w.scales[r] = scale;
      break;
    }
  }
}

// int4 from float/bf16 blocks: quantized at load in groups of kInt4DefaultGroup.
void pack_int4_quantizing(PackedWeight& w, const std::vector<LinearBlock>& blocks) {
  std::vector<Int4Matrix> quantized;
  quantized.reserve(blocks.size());
  std::vector<Int4Rows> views(blocks.size());
  std::vector<LinearBlock> int4_blocks(blocks);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const SourceRows src{blocks[b].weight_f32, blocks[b].weight_bf16, w.in};
    std::vector<float> rows(static_cast<size_t>(blocks[b].rows) * w.in);
    for (int i = 0; i < blocks[b].rows; ++i) src.read_row(i, rows.data() + static_cast<size_t>(i) * w.in);
    quantized.push_back(quantize_int4(rows.data(), blocks[b].rows, w.in, kInt4DefaultGroup));
    views[b] = quantized.back().view();
    int4_blocks[b].int4 = &views[b];
  }
  pack_int4(w, int4_blocks);
}

// fp8 from float/bf16 blocks (--dtype fp8): each block quantized at load in
// kFp8LoadBlock squares, its own row blocking kept like a checkpoint's.
void pack_fp8_quantizing(PackedWeight& w, const std::vector<LinearBlock>& blocks) {
  std::vector<Fp8Quantized> quantized;
  quantized.reserve(blocks.size());
  std::vector<Fp8Rows> views(blocks.size());
  std::vector<LinearBlock> fp8_blocks(blocks);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const SourceRows src{blocks[b].weight_f32, blocks[b].weight_bf16, w.in};
    std::vector<float> rows(static_cast<size_t>(blocks[b].rows) * w.in);
    for (int i = 0; i < blocks[b].rows; ++i) src.read_row(i, rows.data() + static_cast<size_t>(i) * w.in);
    quantized.push_back(quantize_fp8(rows.data(), blocks[b].rows, w.in, kFp8LoadBlock));
    views[b] = quantized.back().view();
    fp8_blocks[b].fp8 = &views[b];
  }
  pack_fp8(w, fp8_blocks);
}

std::unique_ptr<PackedWeight> pack(const std::vector<LinearBlock>& blocks, int in,
                                   WeightFormat format) {
  int out = 0;
  bool any_bias = false;
  int int4_blocks = 0, fp8_blocks = 0;
  for (const auto& block : blocks) {
    if (block.rows < 0 || (block.rows > 0 && !block.weight_f32 && !block.weight_bf16 && !block.int4 && !block.fp8)) {
      throw std::invalid_argument("Linear: a weight block has no data or negative rows");
    }
    out += block.rows;
    any_bias = any_bias || block.bias != nullptr;
    int4_blocks += block.int4 != nullptr;
    fp8_blocks += block.fp8 != nullptr;
  }
  if (out <= 0 || in <= 0) throw std::invalid_argument("Linear: out and in must be positive");
  if (int4_blocks != 0 && (format != WeightFormat::int4 || int4_blocks != static_cast<int>(blocks.size()))) {
    throw std::invalid_argument("Linear: int4 blocks need format int4 and cannot mix with float blocks");
  }
  if (fp8_blocks != 0 && (format != WeightFormat::fp8 || fp8_blocks != static_cast<int>(blocks.size()))) {
    throw std::invalid_argument("Linear: fp8 blocks need format fp8 and cannot mix with float blocks");
  }
  auto w = std::make_unique<PackedWeight>();
  w->format = format;
  w->isa = active_isa();
  const bool int4_vnni = format == WeightFormat::int4 && use_avx512_vnni() &&
                         (int4_dot() == Int4Dot::vnni || !use_avx512_bf16());
  w->use_bf16_dot = (format == WeightFormat::bf16 || (format == WeightFormat::int4 && !int4_vnni) ||
                     format == WeightFormat::fp8) && use_avx512_bf16();
  w->use_int8_dot = (format == WeightFormat::int8 && use_avx512_vnni()) || int4_vnni;
  w->out = out;
  w->in = in;
  if (any_bias) w->bias.assign(out, 0.0f);
  if (format == WeightFormat::int4) {
    w->int4_x = w->use_bf16_dot ? Int4X::bf16 : w->isa >= Isa::avx2 ? Int4X::int8 : Int4X::f32;
    if (int4_blocks) pack_int4(*w, blocks);
    else pack_int4_quantizing(*w, blocks);
  } else if (format == WeightFormat::fp8) {
    if (fp8_blocks) pack_fp8(*w, blocks);
    else pack_fp8_quantizing(*w, blocks);
  } else {
    w->ld = padded(in);
    w->int8_tiled = format == WeightFormat::int8 && w->use_int8_dot;
    const int rows = w->int8_tiled ? (out + kInt8TileRows - 1) / kInt8TileRows * kInt8TileRows : out;
    w->data.resize(static_cast<size_t>(rows) * w->ld * w->element_bytes());
    // Padding (columns, and the tiles' extra rows) holds weight 0: q + 128 when tiled.
    if (w->int8_tiled) std::memset(w->data.as<uint8_t>(), 128, static_cast<size_t>(rows) * w->ld);
    if (format == WeightFormat::int8) w->scales.assign(out, 1.0f);
    std::vector<float> tmp(in);
    int r = 0;
    for (const auto& block : blocks) {
      const SourceRows src{block.weight_f32, block.weight_bf16, in};
      for (int i = 0; i < block.rows; ++i, ++r) pack_row(*w, r, src, i, tmp.data());
    }
  }
  int r = 0;
  for (const auto& block : blocks) {
    for (int i = 0; i < block.rows; ++i, ++r) {
      if (block.bias) w->bias[r] = block.bias[i];
    }
  }
  w->amx = pack_amx(*w);
  return w;
}

GemvKernel pick_gemv(const PackedWeight& w) {
  if (w.format == WeightFormat::int4) {
    if (w.use_int8_dot) return gemv_int4_vnni;
    if (w.use_bf16_dot) return gemv_int4_avx512;
    return w.isa >= Isa::avx2 ? gemv_int4_avx2 : gemv_int4_scalar;
  }
  if (w.format == WeightFormat::fp8) {
    if (w.use_bf16_dot) return gemv_fp8_avx512bf16;
    if (w.isa >= Isa::avx512) return gemv_fp8_avx512;
    return w.isa >= Isa::avx2 ? gemv_fp8_avx2 : gemv_fp8_scalar;
  }
  if (w.isa >= Isa::avx512) {
    switch (w.format) {
      case WeightFormat::f32: return gemv_f32_avx512;
      case WeightFormat::f16: return gemv_f16_avx512;
      case WeightFormat::bf16: return w.use_bf16_dot ? gemv_bf16_avx512 : gemv_avx2;
      case WeightFormat::int8: return w.use_int8_dot ? gemv_int8_vnni : gemv_int8_avx512;
      case WeightFormat::int4:
      case WeightFormat::fp8: break;
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

// x staged for w's kernel into buffer (rows on pool's threads where given).
const void* stage_x(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool) {
  if (w.format == WeightFormat::int4) return stage_x_int4(w, x, m, buffer, pool);
  if (w.format == WeightFormat::fp8) return stage_x_fp8(w, x, m, buffer, pool);
  if (w.use_int8_dot) return stage_x_int8(w, x, m, buffer, pool);
  // Float rows already a multiple of kRowAlign long (every Qwen width) are
  // the staged layout as they are: no copy of a whole prompt.
  if (!w.use_bf16_dot && w.in == w.ld) return x;
  const size_t elem = w.use_bf16_dot ? 2 : 4;
  buffer.resize(static_cast<size_t>(m) * w.ld * elem);
  stage_rows(pool, m, [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r) {
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
  });
  return buffer.as<void>();
}

constexpr int kRowsPerTask = 16;

// Headers of staged inputs g .. g+3 for the formats that stage one.
struct GroupHeaders {
  Int8StagedX int8{};
  Int4StagedX int4{};
};

// Inputs g .. g+3 of staged x (their rows are contiguous at stride ld).
const void* input_group(const PackedWeight& w, const void* staged, int g, GroupHeaders& headers) {
  if (w.format == WeightFormat::int4) {
    Int4StagedX& header = headers.int4;
    header = *static_cast<const Int4StagedX*>(staged);
    const size_t elem = w.int4_x == Int4X::f32 ? 4 : w.int4_x == Int4X::bf16 ? 2 : 1;
    header.x = static_cast<const char*>(header.x) + static_cast<size_t>(g) * w.ld * elem;
    if (header.unit_scale) header.unit_scale += static_cast<size_t>(g) * w.groups * int4_x_blocks_per_group(w);
    header.group_sums += static_cast<size_t>(g) * w.groups;
    return &header;
  }
  if (w.use_int8_dot) {
    Int8StagedX& header = headers.int8;
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
  GroupHeaders header;
  for (int r = rb; r < re; r += kRowsPerTask) {
    const int r_end = std::min(re, r + kRowsPerTask);
    for (int g = 0; g < m; g += kGemvMaxRows) {
      kernel(w, input_group(w, staged, g, header), std::min(kGemvMaxRows, m - g),
             y + static_cast<size_t>(g) * w.out, r, r_end);
    }
  }
}

// A decode kernel's batch-invariant GEMM, the rows it wants per call, and
// whether plain prefill should take it over oneDNN's f32 tiles where oneDNN
// has no bf16 matmul (prefill_batch_invariant).
struct Gemm {
  GemvKernel kernel = nullptr;
  int (*panel_rows)(const PackedWeight&) = nullptr;
  bool beats_onednn_f32 = false;
  bool beats_onednn_bf16 = false;
};

// The batch-invariant GEMM of a decode kernel, where there is one: none
// sends larger batches to gemv_groups.
Gemm pick_gemm(GemvKernel gemv) {
  if (gemv == gemv_avx2) return {gemm_avx2, gemm_avx2_panel_rows, true};
  if (gemv == gemv_bf16_avx512) return {gemm_bf16_avx512, gemm_bf16_avx512_panel_rows};
  if (gemv == gemv_int8_vnni) return {gemm_int8_vnni, gemm_int8_vnni_panel_rows, true, true};
  if (gemv == gemv_int4_avx512) return {gemm_int4_avx512, gemm_int4_avx512_panel_rows};
  if (gemv == gemv_int4_vnni) return {gemm_int4_vnni, gemm_int4_vnni_panel_rows};
  if (gemv == gemv_fp8_avx512bf16) return {gemm_fp8_avx512bf16, gemm_fp8_avx512bf16_panel_rows};
  return {};
}

// One batch-invariant projection, its x staged: the kernel for its m and the
// rows each task covers.
struct GemvPlan {
  const PackedWeight* w = nullptr;
  const void* staged = nullptr;
  int m = 0;
  float* y = nullptr;
  GemvKernel kernel = nullptr;
  GemvKernel gemm = nullptr;
  int rows_per_task = 0;

  int tasks() const { return (w->out + rows_per_task - 1) / rows_per_task; }
  // Output rows of tasks [begin, end).
  void run(int begin, int end) const {
    const int rb = begin * rows_per_task, re = std::min(w->out, end * rows_per_task);
    if (gemm) gemm(*w, staged, m, y, rb, re);
    else if (m <= kGemvMaxRows) kernel(*w, staged, m, y, rb, re);
    else gemv_groups(kernel, *w, staged, m, y, rb, re);
  }
};

// The plan for x already staged for w.
GemvPlan plan_gemv_staged(const PackedWeight& w, const void* staged, int m, float* y) {
  GemvPlan plan;
  plan.w = &w;
  plan.m = m;
  plan.y = y;
  plan.kernel = pick_gemv(w);
  plan.gemm = m > kGemvMaxRows ? pick_gemm(plan.kernel).kernel : nullptr;
  plan.staged = staged;
  plan.rows_per_task = plan.gemm ? pick_gemm(plan.kernel).panel_rows(w) : kRowsPerTask;
  return plan;
}

// x staged (its rows on pool's threads where a prompt's are many) and planned.
GemvPlan plan_gemv(const PackedWeight& w, const float* x, int m, float* y, AlignedBuffer& buffer, ThreadPool& pool) {
  return plan_gemv_staged(w, stage_x(w, x, m, buffer, &pool), m, y);
}

// Whether stage_x gives the same bytes for a and b from one x: the layout
// depends on the format, the widths, the dot product the kernel picked and
// the int4 groups (an int4 weight with its own input order never shares).
bool same_staging(const PackedWeight& a, const PackedWeight& b) {
  return a.format == b.format && a.isa == b.isa && a.in == b.in && a.ld == b.ld &&
         a.use_bf16_dot == b.use_bf16_dot && a.use_int8_dot == b.use_int8_dot && a.int4_x == b.int4_x &&
         a.groups == b.groups && a.group_len == b.group_len && a.slot_input.empty() && b.slot_input.empty();
}

void run_gemv(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool) {
  if (w.amx) return amx_forward(w, x, m, y, pool);
  const GemvPlan plan = plan_gemv(w, x, m, y, x_scratch(), pool);
  // Balanced: a thread that starts late or streams slower hands the rest of
  // its rows to the other instead of making it wait at the end of the call.
  pool.parallel_for_balanced(plan.tasks(), [&](int begin, int end) { plan.run(begin, end); });
}

std::atomic<int>& int4_dot_slot() {
  static std::atomic<int> slot{[] {
    Int4Dot dot = Int4Dot::vnni;
    if (const char* env = std::getenv("XFT_INT4_DOT")) {
      if (std::strcmp(env, "bf16") == 0) dot = Int4Dot::bf16;
      else if (std::strcmp(env, "vnni") != 0) std::fprintf(stderr, "XFT_INT4_DOT=%s: expected vnni or bf16; using vnni\n", env);
    }
    return static_cast<int>(dot);
  }()};
  return slot;
}

}  // namespace

void int8_unpack_rows(const PackedWeight& w, int r0, int rows, int8_t* dst) {
  if (!w.int8_tiled) {
    std::memcpy(dst, w.row<int8_t>(r0), static_cast<size_t>(rows) * w.ld);
    return;
  }
  for (int i = 0; i < rows; ++i) {
    const uint8_t* lane = int8_tile(w, r0 + i) + static_cast<size_t>((r0 + i) % kInt8TileRows) * 4;
    int8_t* row = dst + static_cast<size_t>(i) * w.ld;
    for (int c = 0; c < w.ld; c += 4) {
      for (int k = 0; k < 4; ++k) row[c + k] = static_cast<int8_t>(lane[c * kInt8TileRows + k] ^ 0x80);
    }
  }
}

Int4Dot int4_dot() { return static_cast<Int4Dot>(int4_dot_slot().load(std::memory_order_relaxed)); }
void set_int4_dot(Int4Dot dot) { int4_dot_slot().store(static_cast<int>(dot), std::memory_order_relaxed); }

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::f32: return "f32";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::f16: return "f16";
    case WeightFormat::int8: return "int8";
    case WeightFormat::int4: return "int4";
    case WeightFormat::fp8: return "fp8";
  }
  return "unknown";
}

bool parse_weight_format(const std::string& text, WeightFormat* format) {
  if (text == "f32") *format = WeightFormat::f32;
  else if (text == "bf16") *format = WeightFormat::bf16;
  else if (text == "f16") *format = WeightFormat::f16;
  else if (text == "int8") *format = WeightFormat::int8;
  else if (text == "int4") *format = WeightFormat::int4;
  else if (text == "fp8") *format = WeightFormat::fp8;
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
  return static_cast<size_t>(packed_->out) * packed_->row_bytes() + packed_->scales.size() * sizeof(float) +
         packed_->group_scale.size() * sizeof(uint16_t) + packed_->group_zero.size() +
         packed_->fp8_scale.size() * sizeof(float);
}

size_t Linear::packed_bytes(WeightFormat format, uint64_t out, uint64_t in) {
  const uint64_t ld = (in + kRowAlign - 1) / kRowAlign * kRowAlign;
  switch (format) {
    case WeightFormat::f32: return out * ld * sizeof(float);
    case WeightFormat::bf16:
    case WeightFormat::f16: return out * ld * sizeof(uint16_t);
    case WeightFormat::int8: return out * ld + out * sizeof(float);
    case WeightFormat::int4: {
      // Every group padded to whole 32-input units; per group and row (rows
      // padded to whole row blocks) a bf16 scale and a zero byte.
      const uint64_t groups = (in + kInt4DefaultGroup - 1) / kInt4DefaultGroup;
      const uint64_t group_len = (std::min<uint64_t>(in, kInt4DefaultGroup) + 31) / 32 * 32;
      const uint64_t param_rows = (out + kInt4RowBlock - 1) / kInt4RowBlock * kInt4RowBlock;
      return out * groups * group_len / 2 + param_rows * groups * (sizeof(uint16_t) + 1);
    }
    case WeightFormat::fp8: {
      const uint64_t blocks = (out + kFp8LoadBlock - 1) / kFp8LoadBlock * ((in + kFp8LoadBlock - 1) / kFp8LoadBlock);
      return out * ld + blocks * sizeof(float);
    }
  }
  return 0;
}

void Linear::dequantize_row(int r, float* out) const {
  const PackedWeight& w = *packed_;
  switch (w.format) {
    case WeightFormat::f32: std::memcpy(out, w.row<float>(r), sizeof(float) * w.in); break;
    case WeightFormat::bf16: bf16_to_f32(w.row<uint16_t>(r), out, w.in); break;
    case WeightFormat::f16: f16_to_f32(w.row<uint16_t>(r), out, w.in); break;
    case WeightFormat::int8: {
      thread_local std::vector<int8_t> row;
      row.resize(w.ld);
      int8_unpack_rows(w, r, 1, row.data());
      for (int c = 0; c < w.in; ++c) out[c] = static_cast<float>(row[c]) * w.scales[r];
      break;
    }
    case WeightFormat::fp8: {
      thread_local std::vector<float> row;
      row.resize(w.ld);
      fp8_dequantize_row(w, r, row.data());
      std::memcpy(out, row.data(), sizeof(float) * w.in);
      break;
    }
    case WeightFormat::int4: {
      thread_local std::vector<float> slots;
      slots.resize(w.ld);
      int4_dequantize_slots(w, r, slots.data());
      if (w.slot_input.empty()) {
        std::memcpy(out, slots.data(), sizeof(float) * w.in);
      } else {
        for (int s = 0; s < w.ld; ++s) {
          if (w.slot_input[s] >= 0) out[w.slot_input[s]] = slots[s];
        }
      }
      break;
    }
  }
}

std::string Linear::kernel_name() const {
  if (!packed_) return "empty";
  if (packed_->amx) return amx_kernel_name(*packed_);
  std::string name = weight_format_name(packed_->format);
  name += '/';
  name += isa_name(packed_->isa);
  if (packed_->use_bf16_dot) name += "-bf16";
  if (packed_->use_int8_dot) name += "-vnni";
  if (packed_->format == WeightFormat::int4 && packed_->int4_x == Int4X::int8) name += "-int8x";
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

bool Linear::prefill_batch_invariant() const {
  // Without bf16 matmul oneDNN widens the same weight tiles to float and runs
  // the same FMAs as gemm_avx2, which needs no tiles: bench_kernels --only
  // linear (bf16, 2 threads, 2-core AVX2 EPYC) measured the GEMM 1.2-2.4x
  // oneDNN at m = 17..64 and 0.95-1.15x at m = 512 on Qwen2.5-0.5B shapes, so
  // plain prefill gets batch invariance at no cost. With bf16 matmul
  // (AVX-512) oneDNN runs half-width products these kernels do not have.
  // The AVX-512 GEMMs (vdpbf16ps, VNNI) keep the decode kernels' per-output
  // dot products, one output per instruction, and run where oneDNN has bf16
  // matmul: bench_kernels --only linear (2-core AVX-512 EPYC, Zen 4,
  // Qwen2.5-0.5B shapes) measured the bf16 GEMM at 0.85-0.91x of it at
  // m = 512, so oneDNN keeps plain prefill there.
  // A weight packed for AMX runs every m on the tiles (emulated ones too, so
  // a test or serve_batching run sees one kernel for decode and prefill).
  // The int8 VNNI GEMM is the exception: one vpdpbusd per 64 products, a
  // row per lane, where oneDNN widens the int8 tiles to bf16 for its matmul;
  // bench_kernels --only linear --dtype int8 (same machine) measured it at
  // 3-24x oneDNN for m = 32..512. The int4 VNNI GEMM is 1.5-2.0x oneDNN too
  // (m = 128, 512) but quantizes x to int8 per group where oneDNN keeps it
  // bf16: against the same weights in fp32 (model_int4_test) that raises the
  // worst logit errors toward the test's bound and flips a near-tied expert
  // choice (Qwen2-MoE AWQ, 2 ranks), so plain int4
  // prefill keeps oneDNN's precision and the server's batch-invariant path
  // (like decode) takes the speed.
  if (packed_ && packed_->amx) return true;
  if (!packed_) return false;
  const Gemm gemm = pick_gemm(pick_gemv(*packed_));
  return gemm.beats_onednn_bf16 || (gemm.beats_onednn_f32 && !onednn_bf16_matmul_available());
}

void Linear::forward(const float* x, int m, float* y, ThreadPool& pool) const {
  if (m <= 0) return;
  if (m <= kGemvMaxRows || prefill_batch_invariant()) forward_gemv(x, m, y, pool);
  else forward_matmul(x, m, y, pool);
}

size_t Linear::data_bytes() const { return packed_ ? packed_->data.size() : 0; }

void Linear::move_data_into(unsigned char* into) {
  const size_t bytes = packed_->data.size();
  std::memcpy(into, packed_->data.as<unsigned char>(), bytes);
  packed_->data = AlignedBuffer::borrowed(into, bytes);
}

void forward_gemv_grouped(std::span<const GroupedProjection> projections, ThreadPool& pool) {
  // Staged inputs live until the region ends, one buffer per projection
  // (x_scratch() holds one); kept across calls so decode allocates nothing.
  // The workers reach the caller's vectors through these references: in
  // their code the thread_local names would mean each worker's own (empty)
  // vectors.
  thread_local std::vector<AlignedBuffer> buffers_of_caller;
  thread_local std::vector<GemvPlan> plans_of_caller;
  thread_local std::vector<int> first_task_of_caller;
  thread_local std::vector<size_t> staging_of_caller;
  std::vector<AlignedBuffer>& buffers = buffers_of_caller;
  std::vector<GemvPlan>& plans = plans_of_caller;
  std::vector<int>& first_task = first_task_of_caller;  // [plans + 1]
  std::vector<size_t>& staging_of = staging_of_caller;  // [plans]: the projection whose staging each plan reads
  if (buffers.size() < projections.size()) buffers.resize(projections.size());
  plans.clear();
  staging_of.clear();
  first_task.assign(1, 0);
  int staged_rows = 0;
  for (size_t i = 0; i < projections.size(); ++i) {
    const GroupedProjection& p = projections[i];
    if (p.m <= 0) continue;
    const PackedWeight& w = p.linear->packed();
    if (w.amx) {  // the tile kernels run their own regions
      amx_forward(w, p.x, p.m, p.y, pool);
      continue;
    }
    // A projection on the same x as the one before, staged alike (a decode
    // token's chosen experts' gate/up), reads that staging: x is rounded or
    // quantized once per layer, not once per expert.
    const size_t before = staging_of.empty() ? projections.size() : staging_of.back();
    const bool shares = before < projections.size() && p.x == projections[before].x && p.m == projections[before].m &&
                        same_staging(w, projections[before].linear->packed());
    staging_of.push_back(shares ? before : i);
    if (!shares) staged_rows += p.m;
    plans.push_back(plan_gemv_staged(w, nullptr, p.m, p.y));
    first_task.push_back(first_task.back() + plans.back().tasks());
  }
  // Staging: a prompt's rows (many, spread over the experts) shared out to
  // the threads by projection, or by row where one projection has them all;
  // a decode step's few on the caller, where a region would cost more than
  // they do.
  const int n_plans = static_cast<int>(plans.size());
  const auto own_staging = [&](int k) { return k == 0 || staging_of[k] != staging_of[k - 1]; };
  const auto stage_plan = [&](int k, ThreadPool* rows_on) {
    const GroupedProjection& p = projections[staging_of[k]];
    plans[k].staged = stage_x(p.linear->packed(), p.x, p.m, buffers[staging_of[k]], rows_on);
  };
  if (n_plans == 1) {
    stage_plan(0, &pool);
  } else if (staged_rows >= ThreadPool::kParallelRowsMin) {
    pool.parallel_for_balanced(n_plans, [&](int begin, int end) {
      for (int k = begin; k < end; ++k) {
        if (own_staging(k)) stage_plan(k, nullptr);
      }
    });
  } else {
    for (int k = 0; k < n_plans; ++k) {
      if (own_staging(k)) stage_plan(k, nullptr);
    }
  }
  for (int k = 1; k < n_plans; ++k) {
    if (!own_staging(k)) plans[k].staged = plans[k - 1].staged;
  }
  pool.parallel_for_balanced(first_task.back(), [&](int begin, int end) {
    // Runs of tasks may cross from one projection into the next.
    while (begin < end) {
      const size_t p = std::upper_bound(first_task.begin(), first_task.end(), begin) - first_task.begin() - 1;
      const int stop = std::min(end, first_task[p + 1]);
      plans[p].run(begin - first_task[p], stop - first_task[p]);
      begin = stop;
    }
  });
}

}  // namespace xft::engine
