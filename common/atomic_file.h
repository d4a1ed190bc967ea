// Writes a file so that readers see either the old or the complete new content.
#pragma once

#include <string>
#include <sys/types.h>

#include "common/expected.h"

namespace xft {

// Collects the content and, on commit(), writes it to a temp file beside the
// target and renames that over the target. The temp file has a random name and
// is created with O_EXCL|O_NOFOLLOW and mode 0600, so nothing planted beside
// the target (a symlink at a guessable name) can redirect the write; it gets
// its final mode before any data, and it is removed on every failure. A
// bind-mounted target (rename gives EBUSY, as with a container's /etc/hosts)
// is rewritten in place instead (rewrite_in_place).
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

// Truncates and rewrites an existing regular file through O_NOFOLLOW: a
// symlink (or anything not a regular file) at `path` is an error, never followed.
Expected<void> rewrite_in_place(const std::string& path, const std::string& data);

// Reads a whole file; an error names the path and errno text.
Expected<std::string> read_file(const std::string& path);
// AtomicFile in one call.
Expected<void> write_file_atomic(const std::string& path, const std::string& data,
                                 mode_t mode = 0644);

}  // namespace xft
