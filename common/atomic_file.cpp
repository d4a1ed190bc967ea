#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
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

Expected<std::string> random_name_part() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[12];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  std::string out;
  for (unsigned char b : bytes) out += kAlphabet[b % (sizeof kAlphabet - 1)];
  return out;
}

struct TempFile {
  std::string path;
  int fd = -1;
};

// ".<name>.xftctl-<12 random characters>" beside the target, created with
// O_EXCL|O_NOFOLLOW: a name planted in advance (file or symlink) is never
// opened, and guessing the next one is hopeless.
Expected<TempFile> create_temp_beside(const std::string& target) {
  size_t slash = target.rfind('/');
  std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
  name = name.substr(0, 200);  // room for the prefix and suffix within NAME_MAX
  for (int attempt = 0; attempt < 16; ++attempt) {
    auto random = random_name_part();
    if (!random) return random.error();
    std::string temp = dir + "." + name + ".xftctl-" + *random;
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return TempFile{temp, fd};
    if (errno != EEXIST) return make_error(errno_text("cannot create a temp file beside", target));
  }
  return make_error("cannot create a temp file beside " + target + ": every random name tried exists");
}

// The mode is set before any data is there, so the content is never readable
// under a wider mode than asked for, whatever the umask.
Expected<void> fill(int fd, const std::string& data, mode_t mode, const std::string& path) {
  if (::fchmod(fd, mode) != 0) return make_error(errno_text("cannot chmod", path));
  if (auto written = write_all(fd, data, path); !written) return written;
  if (::fsync(fd) != 0) return make_error(errno_text("cannot sync", path));
  return {};
}

// Makes the rename itself durable. Best effort: some filesystems refuse fsync on a directory.
void sync_directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(std::string path, mode_t mode) : path_(std::move(path)), mode_(mode) {}
AtomicFile::~AtomicFile() = default;

Expected<void> AtomicFile::commit() {
  auto temp = create_temp_beside(path_);
  if (!temp) return temp.error();
  auto written = fill(temp->fd, content_, mode_, path_);
  ::close(temp->fd);
  if (!written) {
    ::unlink(temp->path.c_str());
    return written;
  }
  if (::rename(temp->path.c_str(), path_.c_str()) == 0) {
    sync_directory_of(path_);
    return {};
  }
  int rename_errno = errno;
  ::unlink(temp->path.c_str());
  if (rename_errno == EBUSY || rename_errno == EXDEV) return rewrite_in_place(path_, content_);
  errno = rename_errno;
  return make_error(errno_text("cannot rename onto", path_));
}

Expected<void> rewrite_in_place(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP)
    return make_error("cannot rewrite " + path + " in place: it is a symlink, which xftctl does not follow");
  if (fd < 0) return make_error(errno_text("cannot open", path));
  struct stat st {};
  Expected<void> written;
  if (::fstat(fd, &st) != 0)
    written = make_error(errno_text("cannot stat", path));
  else if (!S_ISREG(st.st_mode))
    written = make_error("cannot rewrite " + path + " in place: not a regular file");
  else if (::ftruncate(fd, 0) != 0)
    written = make_error(errno_text("cannot truncate", path));
  if (written) written = write_all(fd, data, path);
  if (written && ::fsync(fd) != 0) written = make_error(errno_text("cannot sync", path));
  ::close(fd);
  return written;
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
