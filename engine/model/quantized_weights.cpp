#include "engine/model/quantized_weights.h"

#include <algorithm>
#include <map>

#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

int nibble(int32_t word, int i) { return (static_cast<uint32_t>(word) >> (4 * i)) & 15; }

bool aligned(Range r, int full) { return r.begin % 8 == 0 && (r.end % 8 == 0 || r.end == full); }

// The global groups the inputs use, numbered locally in ascending order.
struct LocalGroups {
  int first = 0, last = 0;      // global range read from scales/qzeros [first, last]
  std::map<int, int> local_of;  // global -> local
};

LocalGroups local_groups(const std::vector<int32_t>& global) {
  LocalGroups g;
  for (int32_t v : global) g.local_of.emplace(v, 0);
  int next = 0;
  for (auto& [global_id, local] : g.local_of) local = next++;
  g.first = g.local_of.begin()->first;
  g.last = g.local_of.rbegin()->first;
  return g;
}

}  // namespace

Expected<Int4Matrix> read_int4_projection(const WeightSource& weights, const QuantConfig& quant,
                                          const std::string& base, Range out, Range in, int full_out,
                                          int full_in) {
  const bool gptq = quant.method == QuantMethod::gptq;
  if (!aligned(out, full_out) || (gptq && !aligned(in, full_in))) {
    return make_error("tensor " + base + ": a slice of rows [" + std::to_string(out.begin) + "," +
                      std::to_string(out.end) + ") x inputs [" + std::to_string(in.begin) + "," +
                      std::to_string(in.end) + ") does not fall on the 8-value int32 packing");
  }
  const int total_groups = quant.groups(full_in);
  Int4Matrix m;
  m.rows = out.size();
  m.in = in.size();
  m.q.resize(static_cast<size_t>(m.rows) * m.in);

  // Each input's global group.
  std::vector<int32_t> group(m.in);
  if (gptq) {
    auto g_idx = weights.read_i32(base + ".g_idx", Slice{in.begin, in.end});
    if (!g_idx) return g_idx.error();
    group = std::move(*g_idx);
  } else {
    for (int c = 0; c < m.in; ++c) group[c] = quant.group_size > 0 ? (in.begin + c) / quant.group_size : 0;
  }
  for (int32_t g : group) {
    if (g < 0 || g >= total_groups) {
      return make_error("tensor " + base + ".g_idx: group " + std::to_string(g) + " is outside [0," +
                        std::to_string(total_groups) + ")");
    }
  }
  const LocalGroups groups = local_groups(group);
  m.groups = static_cast<int>(groups.local_of.size());
  m.group_of.resize(m.in);
  for (int c = 0; c < m.in; ++c) m.group_of[c] = groups.local_of.at(group[c]);

  const Slice packed_out{out.begin / 8, (out.end + 7) / 8};
  if (gptq) {
    auto qweight = weights.read_i32(base + ".qweight", Slice{in.begin / 8, (in.end + 7) / 8}, Slice{out.begin, out.end});
    if (!qweight) return qweight.error();
    for (int pr = 0; pr < (m.in + 7) / 8; ++pr) {
      for (int r = 0; r < m.rows; ++r) {
        const int32_t word = (*qweight)[static_cast<size_t>(pr) * m.rows + r];
        for (int i = 0; i < 8 && pr * 8 + i < m.in; ++i) m.q[static_cast<size_t>(r) * m.in + pr * 8 + i] = uint8_t(nibble(word, i));
      }
    }
  } else {
    auto qweight = weights.read_i32(base + ".qweight", Slice{in.begin, in.end}, packed_out);
    if (!qweight) return qweight.error();
    const int words = static_cast<int>(packed_out.end - packed_out.begin);
    for (int c = 0; c < m.in; ++c) {
      for (int k = 0; k < words; ++k) {
        const int32_t word = (*qweight)[static_cast<size_t>(c) * words + k];
        for (int i = 0; i < 8; ++i) m.q[static_cast<size_t>(k * 8 + kAwqOrder[i]) * m.in + c] = uint8_t(nibble(word, i));
      }
    }
  }

  const Slice group_rows{groups.first, groups.last + 1};
  auto scales = weights.read_f32(base + ".scales", group_rows, Slice{out.begin, out.end});
  if (!scales) return scales.error();
  auto qzeros = weights.read_i32(base + ".qzeros", group_rows, packed_out);
  if (!qzeros) return qzeros.error();
  const int words = static_cast<int>(packed_out.end - packed_out.begin);
  m.scale_f16.resize(static_cast<size_t>(m.rows) * m.groups);
  m.zero.resize(static_cast<size_t>(m.rows) * m.groups);
  for (const auto& [global, local] : groups.local_of) {
    const int row = global - groups.first;
    for (int r = 0; r < m.rows; ++r) {
      const size_t dst = static_cast<size_t>(r) * m.groups + local;
      // f16 scales read as float are exact, and so is the way back.
      m.scale_f16[dst] = f32_to_f16((*scales)[static_cast<size_t>(row) * m.rows + r]);
      const int word_index = r / 8;
      const int32_t word = (*qzeros)[static_cast<size_t>(row) * words + word_index];
      const int i = gptq ? r % 8 : static_cast<int>(std::find(kAwqOrder, kAwqOrder + 8, r % 8) - kAwqOrder);
      m.zero[dst] = uint8_t(nibble(word, i) + (quant.zero_minus_one ? 1 : 0));
    }
  }
  return m;
}

Expected<Fp8Matrix> read_fp8_projection(const WeightSource& weights, const QuantConfig& quant, const std::string& base,
                                        Range out, Range in, int full_out, int full_in) {
  const int br = quant.block_rows, bc = quant.block_cols;
  auto on_block = [](Range r, int block, int full) {
    return r.begin % block == 0 && (r.end % block == 0 || r.end == full);
  };
  if (!on_block(out, br, full_out) || !on_block(in, bc, full_in)) {
    return make_error("tensor " + base + ".weight: a slice of rows [" + std::to_string(out.begin) + "," +
                      std::to_string(out.end) + ") x inputs [" + std::to_string(in.begin) + "," +
                      std::to_string(in.end) + ") cuts an FP8 block of " + std::to_string(br) + "x" +
                      std::to_string(bc));
  }
  const std::string scale_name = base + ".weight_scale_inv";
  auto scale_meta = weights.meta(scale_name);
  if (!scale_meta) return scale_meta.error();
  const std::vector<int64_t> scale_shape{(full_out + br - 1) / br, (full_in + bc - 1) / bc};
  if (scale_meta->shape != scale_shape) {
    return make_error("tensor " + scale_name + ": shape [" +
                      (scale_meta->shape.size() == 2 ? std::to_string(scale_meta->shape[0]) + "," +
                                                           std::to_string(scale_meta->shape[1])
                                                     : std::string("?")) +
                      "], expected [" + std::to_string(scale_shape[0]) + "," + std::to_string(scale_shape[1]) +
                      "] (ceil of " + std::to_string(full_out) + "x" + std::to_string(full_in) + " over weight_block_size)");
  }
  Fp8Matrix m;
  m.rows = out.size();
  m.in = in.size();
  m.block_rows = br;
  m.block_cols = bc;
  auto q = weights.read_f8(base + ".weight", Slice{out.begin, out.end}, Slice{in.begin, in.end});
  if (!q) return q.error();
  m.q = std::move(*q);
  auto scale = weights.read_f32(scale_name, Slice{out.begin / br, (out.end + br - 1) / br},
                                Slice{in.begin / bc, (in.end + bc - 1) / bc});
  if (!scale) return scale.error();
  m.scale = std::move(*scale);
  if (m.q.size() != static_cast<size_t>(m.rows) * m.in) {
    return make_error("tensor " + base + ".weight: read " + std::to_string(m.q.size()) + " values, expected " +
                      std::to_string(static_cast<size_t>(m.rows) * m.in));
  }
  return m;
}

}  // namespace xft::engine
