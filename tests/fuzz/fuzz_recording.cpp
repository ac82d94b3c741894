// Fuzz target: the recording reader (`asynccheck analyze FILE` reads recordings from anywhere).
// Properties: read_recording never crashes, hangs or allocates without bound, read whole or in its steps (a replay);
// it fails with a message; a
// recording it accepts writes back to text that reads again into the same text (write/read round trip); the
// percent-encoding accepts only well-formed escapes and inverts its encoder.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "analysis/recording.h"
#include "analysis/replay.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check_percent(std::string_view token) {
  std::string decoded;
  if (asynccheck::percent_decode(token, decoded)) {
    // Accepted: every '%' starts an escape of exactly two hexadecimal digits.
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] != '%') continue;
      FUZZ_CHECK(i + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
                     std::isxdigit(static_cast<unsigned char>(token[i + 2])),
                 "percent_decode accepted a malformed escape at offset %zu", i);
      i += 2;
    }
  }
  // The encoder's output is one token and decodes to its input. The one exception is by design: "%00" is the
  // empty string, so a text of exactly one NUL byte (impossible in program arguments, paths and symbol names,
  // which are C strings) is not representable.
  if (token != std::string_view("\0", 1)) {
    std::string encoded = asynccheck::percent_encode(token);
    FUZZ_CHECK(encoded.find_first_of(" \n\r\t") == std::string::npos, "percent_encode left a separator");
    std::string back;
    FUZZ_CHECK(asynccheck::percent_decode(encoded, back), "percent_decode rejected percent_encode's output");
    FUZZ_CHECK(back == token, "percent_decode(percent_encode(x)) != x");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Only short inputs as a single token: the encoder check is linear, the reader below covers long ones.
  if (size <= 256) check_percent(text);

  // Read in its steps (analysis/replay.h) when it has any: never a crash or a hang, a failure with a message.
  if (text.find("step ") != std::string::npos) {
    asynccheck::EventLog replayed;
    std::string why;
    std::istringstream steps(text);
    asynccheck::Replay replay([](asynccheck::EventLog& head, asynccheck::StreamingOptions& options, std::string&) {
      options.analysis = asynccheck::analysis_options(head);
      return true;
    });
    if (!asynccheck::read_recording(steps, replayed, why, &replay)) {
      FUZZ_CHECK(!why.empty(), "read_recording with a replay failed without a message");
    }
  }

  asynccheck::EventLog log;
  std::string error;
  std::istringstream in(text);
  if (!asynccheck::read_recording(in, log, error)) {
    FUZZ_CHECK(!error.empty(), "read_recording failed without a message");
    return 0;
  }

  // Round trip: what was accepted is written, read back, and written again to the same text.
  std::ostringstream first;
  asynccheck::write_recording(first, log);
  asynccheck::EventLog again;
  std::string error2;
  std::istringstream in2(first.str());
  FUZZ_CHECK(asynccheck::read_recording(in2, again, error2), "a written recording does not read back: %s",
             error2.c_str());
  std::ostringstream second;
  asynccheck::write_recording(second, again);
  FUZZ_CHECK(first.str() == second.str(), "write(read(write(log))) differs from write(log)");
  FUZZ_CHECK(again.run.complete == log.run.complete, "the 'complete' flag changed in the round trip");
  return 0;
}
