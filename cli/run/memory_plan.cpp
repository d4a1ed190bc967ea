#include "cli/run/memory_plan.h"

#include <cstdio>
#include <map>

#include "engine/model/memory_estimate.h"

namespace xft::cli::run_qwen {
namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1ull << 30));
  return text;
}

}  // namespace

Expected<MemoryPlan> plan_memory(const launcher::RankPlan& plan, const MemoryPlanInput& in) {
  MemoryPlan out;
  std::map<std::string, uint64_t> per_host;
  int context = 0;
  std::string rows;
  for (const launcher::RankPlacement& rank : plan.ranks) {
    auto memory = engine::estimate_rank_memory(in.config, in.dtype, in.kv, plan.size(), rank.rank, in.max_context,
                                               in.checkpoint_dtype);
    if (!memory) return memory.error();
    context = memory->max_context;
    per_host[rank.host] += memory->total();
    rows += "  rank " + std::to_string(rank.rank) + " on " + rank.host + ": " + gib(memory->weight_bytes) +
            " weights + " + gib(memory->kv_bytes) + " KV" +
            (memory->state_bytes ? " + " + gib(memory->state_bytes) + " linear-attention state" : "") + " = " +
            gib(memory->total()) + "\n";
  }
  out.table = "memory per rank (" + in.model_name + ", " + engine::weight_format_name(in.dtype) +
              " weights, KV and state of one sequence of " + std::to_string(context) + " positions):\n" + rows;
  for (const launcher::PlanHost& host : plan.hosts) {
    const uint64_t need = per_host[host.name];
    const uint64_t have = host.facts.memory_kb * 1024;
    out.table += "  host " + host.name + ": " + gib(need) + " of " + (have ? gib(have) : "unknown") + " memory\n";
    if (have == 0 || need <= have) continue;
    out.warnings.push_back("host " + host.name + ": its ranks need " + gib(need) + ", more than its " + gib(have) +
                           " of memory (MemTotal); spread the model over more ranks on more hosts, or use a "
                           "smaller --dtype (int8, int4) or a shorter --max-context");
  }
  return out;
}

}  // namespace xft::cli::run_qwen
