#include "engine/model/blocks/fused_experts.h"

#include <cstdlib>

namespace xft::engine {

bool FusedExpertView::locate(const std::string& name, Location& where) const {
  // "<prefix>experts.<E>.<gate|up|down>_proj.weight"
  const std::string marker = "experts.";
  const size_t at = name.rfind(marker);
  if (at == std::string::npos) return false;
  const std::string prefix = name.substr(0, at);
  const std::string rest = name.substr(at + marker.size());
  const size_t dot = rest.find('.');
  if (dot == std::string::npos || dot == 0) return false;
  for (size_t i = 0; i < dot; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return false;
  }
  const int64_t expert = std::atoll(rest.substr(0, dot).c_str());
  const std::string which = rest.substr(dot + 1);
  const ModelConfig& c = inner_.config();
  const int64_t inter = c.moe.expert_intermediate, hidden = c.hidden;
  if (expert >= c.moe.experts) return false;
  if (which == "gate_proj.weight" || which == "up_proj.weight") {
    where.stacked = prefix + "experts.gate_up_proj";
    where.first_row = expert * 2 * inter + (which == "up_proj.weight" ? inter : 0);
    where.rows = inter;
    where.cols = hidden;
    return true;
  }
  if (which == "down_proj.weight") {
    where.stacked = prefix + "experts.down_proj";
    where.first_row = expert * hidden;
    where.rows = hidden;
    where.cols = inter;
    return true;
  }
  return false;
}

Slice FusedExpertView::shifted(const Location& where, Slice rows) const {
  const int64_t end = rows.end < 0 ? where.rows : rows.end;
  return {where.first_row + rows.begin, where.first_row + end};
}

bool FusedExpertView::has(const std::string& name) const {
  Location where;
  return locate(name, where) ? inner_.has(where.stacked) : inner_.has(name);
}

Expected<TensorMeta> FusedExpertView::meta(const std::string& name) const {
  Location where;
  if (!locate(name, where)) return inner_.meta(name);
  auto stacked = inner_.meta(where.stacked);
  if (!stacked) return stacked.error();
  return TensorMeta{name, stacked->dtype, {where.rows, where.cols}};
}

Expected<std::vector<float>> FusedExpertView::read_f32(const std::string& name, Slice rows, Slice cols) const {
  Location where;
  if (!locate(name, where)) return inner_.read_f32(name, rows, cols);
  if (rows.begin < 0 || (rows.end >= 0 && (rows.end > where.rows || rows.begin > rows.end))) {
    return make_error("tensor " + name + ": row slice outside the expert's " + std::to_string(where.rows) + " rows");
  }
  return inner_.read_f32(where.stacked, shifted(where, rows), cols);
}

Expected<std::vector<uint16_t>> FusedExpertView::read_bf16(const std::string& name, Slice rows, Slice cols) const {
  Location where;
  if (!locate(name, where)) return inner_.read_bf16(name, rows, cols);
  if (rows.begin < 0 || (rows.end >= 0 && (rows.end > where.rows || rows.begin > rows.end))) {
    return make_error("tensor " + name + ": row slice outside the expert's " + std::to_string(where.rows) + " rows");
  }
  return inner_.read_bf16(where.stacked, shifted(where, rows), cols);
}

}  // namespace xft::engine
