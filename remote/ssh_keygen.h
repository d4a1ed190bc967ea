// Key pairs made with libssh (no ssh-keygen process): the private key in
// OpenSSH's format, written 0600, and the public key as one authorized_keys line.
#pragma once

#include <string>

#include "common/expected.h"

namespace xft::remote {

// Writes PRIVATE_PATH (0600) and PRIVATE_PATH.pub (0644) with a new ed25519
// pair; returns the public line "ssh-ed25519 BASE64 COMMENT". Existing files are
// replaced, so callers check first.
Expected<std::string> generate_ed25519_key_pair(const std::string& private_path, const std::string& comment);

}  // namespace xft::remote
