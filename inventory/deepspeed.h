// Importing a DeepSpeed hostfile: one `NAME slots=N` line per host, `#`
// comments. NAME is how the host is reached (a DNS name or an address) and
// N its rank count. The line reader is shared with `--hostfile`, which reads
// the same files (and Open MPI's) to select inventory hosts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/import.h"
#include "inventory/yaml_errors.h"

namespace xft::inventory {

// One host line: `NAME`, `NAME slots=N` (DeepSpeed, Open MPI) or
// `NAME slots=N max_slots=M` (Open MPI; max_slots is read and ignored, as
// xftctl never starts more ranks than slots).
struct HostfileLine {
  std::string name;
  std::optional<int> slots;
  int line = 0;    // 0-based, as ErrorList takes it
  int column = 0;  // of the name, 0-based
};

// Every host line of `text` in order; `#` comments and blank lines skipped, a
// name given twice is a problem. Problems go to `errors`; `line_form` says
// how a line reads, for their fixes. slots_required: a line without slots=N
// is a problem (the importer writes slots as the host's ranks).
std::vector<HostfileLine> read_hostfile_lines(const std::string& text, ErrorList& errors, bool slots_required,
                                              const std::string& line_form);

// Each host becomes {name: NAME, ranks: N} (the address is the name). Errors
// are "path:line:col: what (fix)", all of them, one per line.
Expected<ImportResult> import_deepspeed(const std::string& text, const std::string& path,
                                        const ImportOptions& options = {});

}  // namespace xft::inventory
