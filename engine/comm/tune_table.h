// The per-cluster allreduce table `xftctl bench allreduce --tune` measures and
// `--algo auto` (and the engine's `auto` backend) use: a JSON file of
// selection strings keyed by rank layout and dtype.
//
//   {"version": 1, "layouts": {"ranks=2 nodes=1 per_node=2": {
//       "hosts": "node-a[0,1]",
//       "float32": {"selection": "shm:0-max", "measured_at": "2025-01-01T00:00:00Z"}}}}
#pragma once

#include <optional>
#include <string>

#include "common/expected.h"
#include "engine/comm/reduce.h"

namespace xft::engine::comm {

// $XFTCTL_ALLREDUCE_TUNE, else $XDG_CACHE_HOME/xftctl/allreduce-tune.json, else ~/.cache/xftctl/...
std::string default_tune_path();

// The stored selection text for (layout key, dtype); nullopt when the file or
// the entry does not exist. A malformed file is an error naming it.
Expected<std::optional<std::string>> load_tuned_selection(const std::string& path,
                                                          const std::string& layout_key, DType dtype);

// Adds or replaces the entry, keeping the others; written atomically.
Expected<void> save_tuned_selection(const std::string& path, const std::string& layout_key,
                                    const std::string& hosts, DType dtype,
                                    const std::string& selection);

}  // namespace xft::engine::comm
