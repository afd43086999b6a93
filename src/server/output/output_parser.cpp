#include "server/output/output_parser.h"

#include <algorithm>

#include "server/output/call_text.h"

namespace hearth::server {
namespace {

bool all_blank(std::string_view s) {
  return skip_blank(s) == s.size();
}

// Bytes at the end of `text` that could be the start of `marker` (a proper prefix).
size_t partial_suffix(std::string_view text, std::string_view marker) {
  const size_t max = std::min(text.size(), marker.size() - 1);
  for (size_t n = max; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

OutputParser::OutputParser(OutputSyntax syntax, std::function<std::string()> make_id)
    : syntax_(syntax), make_id_(std::move(make_id)), triggers_(tool_triggers(syntax.tools)) {
  if (syntax_.starts_in_reasoning) mode_ = Mode::kReasoning;
}

std::vector<OutputDelta> OutputParser::push(std::string_view text) {
  buf_.append(text);
  std::vector<OutputDelta> out;
  drain(false, out);
  return out;
}

std::vector<OutputDelta> OutputParser::finish() {
  std::vector<OutputDelta> out;
  drain(true, out);
  if (!pending_blank_.empty() && calls_ == 0) {
    emit_text(OutputDelta::Kind::kContent, std::exchange(pending_blank_, {}), out);
  }
  return out;
}

void OutputParser::drain(bool at_end, std::vector<OutputDelta>& out) {
  while (!buf_.empty() && step(at_end, out)) {
  }
}

void OutputParser::emit_text(OutputDelta::Kind kind, std::string text,
                             std::vector<OutputDelta>& out) {
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == kind) {
    out.back().text += text;
    return;
  }
  OutputDelta d;
  d.kind = kind;
  d.text = std::move(text);
  out.push_back(std::move(d));
}

void OutputParser::emit_content(std::string text, std::vector<OutputDelta>& out) {
  if (all_blank(text)) {
    pending_blank_ += text;
    return;
  }
  // Trailing blank is held too: it is dropped if a call follows, so where the chunks
  // of a stream happen to end never changes the content.
  size_t end = text.size();
  while (end > 0 && skip_blank(std::string_view(text).substr(end - 1, 1)) == 1) --end;
  std::string tail = text.substr(end);
  text.resize(end);
  emit_text(OutputDelta::Kind::kContent, std::exchange(pending_blank_, std::move(tail)) + text,
            out);
}

bool OutputParser::step(bool at_end, std::vector<OutputDelta>& out) {
  switch (mode_) {
    case Mode::kReasoning: {
      const size_t close = buf_.find(kThinkClose);
      if (close != std::string::npos) {
        emit_text(OutputDelta::Kind::kReasoning, buf_.substr(0, close), out);
        buf_.erase(0, close + kThinkClose.size());
        reasoning_done_ = true;
        mode_ = Mode::kStart;
        // The blank after "</think>" separates it from the answer; it is not the answer.
        buf_.erase(0, skip_blank(buf_));
        return true;
      }
      const size_t hold = at_end ? 0 : partial_suffix(buf_, kThinkClose);
      emit_text(OutputDelta::Kind::kReasoning, buf_.substr(0, buf_.size() - hold), out);
      buf_.erase(0, buf_.size() - hold);
      return false;
    }
    case Mode::kStart: {
      const size_t first = skip_blank(buf_);
      if (first == buf_.size()) {
        if (reasoning_done_) {
          buf_.clear();  // blank between the think block and the answer
        } else {
          pending_blank_ += buf_;
          buf_.clear();
        }
        return false;
      }
      if (first > 0) {
        if (!reasoning_done_) pending_blank_ += buf_.substr(0, first);
        buf_.erase(0, first);
      }
      const std::string_view head = buf_;
      if (!reasoning_done_) {
        if (head.starts_with(kThinkOpen)) {
          buf_.erase(0, kThinkOpen.size());
          pending_blank_.clear();
          mode_ = Mode::kReasoning;
          return true;
        }
        if (!at_end && kThinkOpen.starts_with(head)) return false;
      }
      for (const ToolTrigger& t : triggers_) {
        if (t.at_start_only && head.starts_with(t.text)) {
          region_trigger_ = t;
          mode_ = Mode::kRegion;
          return true;
        }
      }
      mode_ = Mode::kContent;
      return true;
    }
    case Mode::kContent: {
      if (after_call_) {
        // Blank text right after a call separates calls; it is not content, in whatever
        // chunks it arrives (a stream and a whole reply agree).
        buf_.erase(0, skip_blank(buf_));
        if (buf_.empty()) return false;
        after_call_ = false;
      }
      size_t best = std::string::npos;
      const ToolTrigger* found = nullptr;
      for (const ToolTrigger& t : triggers_) {
        if (t.at_start_only) continue;
        const size_t p = buf_.find(t.text);
        if (p < best) {
          best = p;
          found = &t;
        }
      }
      if (found) {
        emit_content(buf_.substr(0, best), out);
        buf_.erase(0, best);
        region_trigger_ = *found;
        mode_ = Mode::kRegion;
        return true;
      }
      size_t hold = 0;
      if (!at_end) {
        for (const ToolTrigger& t : triggers_)
          if (!t.at_start_only) hold = std::max(hold, partial_suffix(buf_, t.text));
      }
      emit_content(buf_.substr(0, buf_.size() - hold), out);
      buf_.erase(0, buf_.size() - hold);
      return false;
    }
    case Mode::kRegion: {
      RegionParse r = parse_tool_region(syntax_.tools, region_trigger_, buf_, at_end);
      if (r.state == RegionParse::State::kNeedMore) {
        if (!at_end) return false;
        r = RegionParse{RegionParse::State::kInvalid, buf_.size(), {}};
      }
      const size_t consumed = std::clamp<size_t>(r.consumed, 1, buf_.size());
      mode_ = Mode::kContent;
      if (r.state == RegionParse::State::kInvalid) {
        emit_content(buf_.substr(0, consumed), out);
        buf_.erase(0, consumed);
        return true;
      }
      buf_.erase(0, consumed);
      pending_blank_.clear();
      for (ToolCall& call : r.calls) {
        if (!syntax_.parallel_tool_calls && calls_ > 0) break;
        if (call.id.empty()) call.id = make_id_();
        OutputDelta d;
        d.kind = OutputDelta::Kind::kToolCall;
        d.index = calls_++;
        d.call = std::move(call);
        out.push_back(std::move(d));
      }
      after_call_ = true;
      return true;
    }
  }
  return false;
}

void collect(const std::vector<OutputDelta>& deltas, ParsedOutput& out) {
  for (const OutputDelta& d : deltas) {
    switch (d.kind) {
      case OutputDelta::Kind::kContent:
        out.content += d.text;
        break;
      case OutputDelta::Kind::kReasoning:
        out.reasoning += d.text;
        break;
      case OutputDelta::Kind::kToolCall:
        out.calls.push_back(d.call);
        break;
    }
  }
}

ParsedOutput parse_output(const OutputSyntax& syntax, std::string_view text,
                          const std::function<std::string()>& make_id) {
  OutputParser parser(syntax, make_id);
  ParsedOutput out;
  collect(parser.push(text), out);
  collect(parser.finish(), out);
  return out;
}

}  // namespace hearth::server
