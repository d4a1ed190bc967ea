// Generating and reporting, shared by the prompt and chat modes (and the
// profile by bench): sampling from the flags, streaming an answer, stop ids.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/run/options.h"
#include "cli/run/rank_context.h"
#include "common/expected.h"
#include "engine/model/generate.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::cli::run_qwen {

engine::SamplingParams sampling_params(const RunOptions& o);
std::vector<int32_t> tokenizer_stop_ids(const engine::Tokenizer& tok);
void print_stats(const engine::GenerateResult& r);
// Every rank generates; rank 0 (the one with a tokenizer) prints as it goes.
Expected<engine::GenerateResult> stream_answer(engine::Model& model, engine::Sequence& seq, const engine::Tokenizer* tok,
                                               std::span<const int32_t> input, const RunOptions& o,
                                               std::vector<int32_t> stop_ids, std::string* answer);
std::vector<int32_t> shared_stop_ids(const engine::Model& model, const std::optional<engine::Tokenizer>& tok,
                                     Communicator* comm);
// --profile: every rank's per-layer time, split into compute and allreduce,
// gathered to rank 0 and printed on stderr (XFT_COMM_TIME's question: how much
// of a token is communication?). Collective.
void report_profile(engine::Model& model, Communicator* comm);

}  // namespace xft::cli::run_qwen
