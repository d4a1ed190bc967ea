#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xft {
namespace {

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

Expected<void> write_all(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(errno_text("cannot write", path));
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

Expected<void> rewrite_in_place(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return make_error(errno_text("cannot open", path));
  auto written = write_all(fd, data, path);
  if (written && ::fsync(fd) != 0) written = make_error(errno_text("cannot sync", path));
  ::close(fd);
  return written;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, mode_t mode) : path_(std::move(path)), mode_(mode) {}
AtomicFile::~AtomicFile() = default;

Expected<void> AtomicFile::commit() {
  std::string temp = path_ + ".xftctl-tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_);
  if (fd < 0) return make_error(errno_text("cannot create", temp));
  auto written = write_all(fd, content_, temp);
  if (written && ::fchmod(fd, mode_) != 0) written = make_error(errno_text("cannot chmod", temp));
  if (written && ::fsync(fd) != 0) written = make_error(errno_text("cannot sync", temp));
  ::close(fd);
  if (!written) {
    ::unlink(temp.c_str());
    return written;
  }
  if (::rename(temp.c_str(), path_.c_str()) == 0) return {};
  int rename_errno = errno;
  ::unlink(temp.c_str());
  if (rename_errno == EBUSY || rename_errno == EXDEV) return rewrite_in_place(path_, content_);
  errno = rename_errno;
  return make_error(errno_text("cannot rename onto", path_));
}

Expected<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(errno_text("cannot open", path));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return make_error(errno_text("cannot read", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Expected<void> write_file_atomic(const std::string& path, const std::string& data, mode_t mode) {
  AtomicFile file(path, mode);
  file.write(data);
  return file.commit();
}

}  // namespace xft
