// Writes a file so that readers see either the old or the complete new content.
#pragma once

#include <string>
#include <sys/types.h>

#include "common/expected.h"

namespace xft {

// Collects the content in a temp file beside the target and renames it over
// the target only on commit(). A bind-mounted target (rename gives EBUSY, as
// with a container's /etc/hosts) is rewritten in place instead.
class AtomicFile {
 public:
  AtomicFile(std::string path, mode_t mode = 0644);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& data) { content_ += data; }
  Expected<void> commit();

 private:
  std::string path_;
  mode_t mode_;
  std::string content_;
};

// Reads a whole file; an error names the path and errno text.
Expected<std::string> read_file(const std::string& path);
// AtomicFile in one call.
Expected<void> write_file_atomic(const std::string& path, const std::string& data,
                                 mode_t mode = 0644);

}  // namespace xft
