// Importing a DeepSpeed hostfile: one `NAME slots=N` line per host, `#`
// comments. NAME is how the host is reached (a DNS name or an address) and
// N its rank count.
#pragma once

#include <string>

#include "common/expected.h"
#include "inventory/import.h"

namespace xft::inventory {

// Each host becomes {name: NAME, ranks: N} (the address is the name). Errors
// are "path:line:col: what (fix)", all of them, one per line.
Expected<ImportResult> import_deepspeed(const std::string& text, const std::string& path,
                                        const ImportOptions& options = {});

}  // namespace xft::inventory
