// The lines `memwall chat` reads: on a terminal through libedit (BSD licence; line editing,
// arrow keys and history) when the machine has it (libedit.so.2, opened at run time), else, and
// whenever stdin is not a terminal (scripts, pipes), plain std::getline with the prompt on
// stderr.
#pragma once

#include <string>

namespace cli {

class LineReader {
  public:
    explicit LineReader(bool interactive);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line without its end; false at the end of input (Ctrl-D).
    bool read(const char* prompt, std::string& line);
    // Whether arrow keys edit the line and recall earlier ones.
    bool editing() const { return editing_; }

  private:
    bool interactive_;
    bool editing_ = false;
};

}  // namespace cli
