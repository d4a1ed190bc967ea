#include "remote/ssh_keygen.h"

#include <libssh/libssh.h>
#include <memory>

#include "common/atomic_file.h"

namespace xft::remote {
namespace {

struct FreeKey {
  void operator()(ssh_key key) const { ssh_key_free(key); }
};
using Key = std::unique_ptr<ssh_key_struct, FreeKey>;

// libssh hands out malloc'ed strings; the private one is wiped before it is freed.
struct FreeString {
  void operator()(char* text) const { ssh_string_free_char(text); }
};
using LibsshString = std::unique_ptr<char, FreeString>;

}  // namespace

Expected<std::string> generate_ed25519_key_pair(const std::string& private_path, const std::string& comment) {
  ssh_key raw = nullptr;
  if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &raw) != SSH_OK)
    return make_error("cannot generate an ed25519 key (libssh)");
  Key key(raw);
  char* private_text = nullptr;
  if (ssh_pki_export_privkey_base64(key.get(), nullptr, nullptr, nullptr, &private_text) != SSH_OK)
    return make_error("cannot export the new private key (libssh)");
  LibsshString private_owned(private_text);
  char* public_text = nullptr;
  if (ssh_pki_export_pubkey_base64(key.get(), &public_text) != SSH_OK)
    return make_error("cannot export the new public key (libssh)");
  LibsshString public_owned(public_text);
  std::string public_line = std::string(ssh_key_type_to_char(ssh_key_type(key.get()))) + " " + public_text;
  if (!comment.empty()) public_line += " " + comment;

  std::string private_file = private_text;
  if (private_file.empty() || private_file.back() != '\n') private_file += '\n';
  auto written = write_file_atomic(private_path, private_file, 0600);
  std::fill(private_file.begin(), private_file.end(), '\0');
  if (!written) return written.error();
  if (auto pub = write_file_atomic(private_path + ".pub", public_line + "\n", 0644); !pub) return pub.error();
  return public_line;
}

}  // namespace xft::remote
