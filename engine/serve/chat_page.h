// The chat page `xftctl run qwen --serve` answers at GET /: one self-contained
// HTML document (inline CSS and JavaScript, nothing fetched from elsewhere)
// that talks to the server's own OpenAI-compatible API. It keeps the
// conversation and sends the whole `messages` array each turn, streams the
// answer from POST /v1/chat/completions (server-sent events), stops it by
// aborting the request, and polls GET /metrics every 2 s for the server's
// decode tokens/s and queue lengths.
//
// Query-string overrides of the settings' starting values, e.g.
// `/?temperature=0&max_tokens=24` (tests use them for a deterministic answer):
// temperature, max_tokens.
//
// Element ids tests rely on: #messages (bubbles `.msg.user` and
// `.msg.assistant`; an assistant bubble gets data-done="1" when its stream has
// ended, however it ended), #input, #send, #stop, #new-chat, #status.
#pragma once

#include <string_view>

namespace xft::engine::serve {

std::string_view chat_page_html();

}  // namespace xft::engine::serve
