// The API key: reading it from a file, taking it out of an Authorization
// header, and comparing it in time that does not depend on where a guess
// first differs.
#pragma once

#include <string>
#include <string_view>

#include "common/expected.h"

namespace xft::engine::serve {

// Equal keys, compared as SHA-256 digests with CRYPTO_memcmp: the time taken
// says nothing about the key's length or about the first differing byte.
bool keys_equal(std::string_view a, std::string_view b);

// The KEY of "Bearer KEY" (scheme in any case, as RFC 9110 says); empty for
// any other header.
std::string bearer_token(std::string_view authorization);

// The key file's first line without trailing whitespace (a CRLF from an
// editor included). Refused when group or others may read the file, or when
// the line is empty.
Expected<std::string> read_api_key_file(const std::string& path);

}  // namespace xft::engine::serve
