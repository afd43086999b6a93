// A reply's structured parts (server/output: reasoning, content, tool calls) as the
// Responses API's output items, whole and as stream events: the Responses counterpart
// of chat_reply.h. Each kind of delta opens its own item (a reasoning item with one
// summary part, a message item with one output_text part, one function_call item per
// call) and closes the one before. The non-streaming reply is the same events'
// items, so both paths always agree.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/chat_template.h"
#include "server/output/output_parser.h"

namespace hearth::server {

class ResponseItems {
 public:
  using Events = std::vector<nlohmann::json>;  // each with its "type"; no sequence_number

  Events on_delta(const OutputDelta& delta);
  // No more deltas: closes the open item, "incomplete" when the reply was cut short
  // (then that item's status says so). A reply with no item gets an empty message.
  Events finish(bool incomplete);

  // The items closed so far (all of them after finish).
  const nlohmann::json& output() const { return output_; }
  // The text of the message items, concatenated (the SDKs' output_text).
  std::string output_text() const;
  // The reply as the assistant turn of a conversation (content, reasoning, calls).
  ChatMessage assistant_message() const;

 private:
  void open(nlohmann::json item, Events& out);
  void close(const std::string& status, Events& out);
  nlohmann::json output_ = nlohmann::json::array();
  nlohmann::json open_item_;  // null when none is open
  std::string open_text_;     // the open item's text so far
  OutputDelta::Kind open_kind_ = OutputDelta::Kind::kContent;
};

// Replies and delta events for a whole text, as a non-streaming reply needs.
ResponseItems collect_items(const OutputSyntax& syntax, const std::string& text, bool incomplete);

}  // namespace hearth::server
