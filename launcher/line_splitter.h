#pragma once

// LineSplitter: cuts one output stream (a worker's stdout or stderr) into pieces that can be
// forwarded on their own without cutting a line, so that lines of several processes sharing
// one terminal or log file never splice into each other. Pure: bytes in, pieces out.
//
// A piece ends:
//  - after '\n' (a line end);
//  - after a '\r' that is not followed by '\n' (progress bars redraw with '\r' and never end
//    a line; holding them until '\n' would freeze the bar). A '\r' that is the last byte seen
//    so far is held, so "...\r\n" is never cut between '\r' and '\n';
//  - after `max_piece` bytes without either: a longer "line" is passed on in chunks rather than
//    buffered without bound (only such a line can be interleaved with other processes' lines);
//  - at Flush(): the tail without a line end (end of file).
// Pieces come out in order and together are exactly the bytes fed in.

#include <cstddef>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace coach::launcher {

struct LinePiece {
  absl::string_view bytes;   // valid only during the callback
  bool starts_line = false;  // the first piece of a line (where a rank prefix goes)
  bool whole_line = false;   // starts a line and ends it with '\n': a complete line
};

class LineSplitter {
 public:
  static constexpr size_t kDefaultMaxPiece = 64 * 1024;
  using Emit = std::function<void(const LinePiece&)>;

  explicit LineSplitter(size_t max_piece = kDefaultMaxPiece) : max_piece_(max_piece) {}

  // Appends `data` and emits every piece that is complete.
  void Feed(absl::string_view data, const Emit& emit);
  // Emits what is held (the unterminated tail), if anything.
  void Flush(const Emit& emit);

  size_t held() const { return buf_.size(); }
  // Whether the next byte starts a line.
  bool at_line_start() const { return at_line_start_; }
  // After a Flush whose tail the caller ended itself (its writer is gone): the next byte starts
  // a line.
  void StartLine() {
    if (buf_.empty()) at_line_start_ = true;
  }

 private:
  const size_t max_piece_;
  std::string buf_;
  size_t scanned_ = 0;  // buf_[0, scanned_) holds no piece end (a held trailing '\r' aside)
  bool at_line_start_ = true;
};

}  // namespace coach::launcher
