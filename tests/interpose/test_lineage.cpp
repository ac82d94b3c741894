// Which processes of a watched program report (interpose/lineage.h): a descendant of a watched process that made no
// CUDA call writes nothing. Here what it reads of the process, without a GPU (whether a log shows CUDA use:
// tests/analysis/test_recording.cpp).
#include "interpose/lineage.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace {

using asynccheck::lineage::maps_hold_library;
using asynccheck::lineage::process_has_library;

TEST(Lineage, MapsHoldTheLibraryByFileNameOnly) {
  const std::string python =
      "5581d0c5e000-5581d0c8e000 r--p 00000000 08:01 131 /usr/bin/python3.12\n"
      "7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 \n"
      "7f1c2b400000-7f1c2b4a2000 r-xp 00012000 08:01 9001 /opt/tools/lib/libasynccheck.so\n"
      "7ffd6c9e2000-7ffd6ca03000 rw-p 00000000 00:00 0                          [stack]\n";
  EXPECT_TRUE(maps_hold_library(python));
  // A copy under another name still counts (tests/robustness/test_threads.cpp loads libasynccheck-copy.so).
  EXPECT_TRUE(maps_hold_library("7f00-7f10 r-xp 00000000 08:01 7 /tmp/x/libasynccheck-copy.so"));
  // The asynccheck command itself, a directory named like the library, and unrelated libraries do not.
  EXPECT_FALSE(maps_hold_library("5581-5582 r-xp 00000000 08:01 5 /work/build/bin/asynccheck\n"));
  EXPECT_FALSE(maps_hold_library("7f00-7f10 r-xp 00000000 08:01 7 /opt/libasynccheck/lib/libcupti.so.13\n"));
  EXPECT_FALSE(maps_hold_library("7f00-7f10 r-xp 00000000 08:01 7 /usr/lib/libunwind.so.8\n[heap]\n"));
  EXPECT_FALSE(maps_hold_library(""));
}

TEST(Lineage, ProcessesWithoutTheLibrary) {
  EXPECT_FALSE(process_has_library(getpid()));   // this test links the pieces, not the library
  EXPECT_FALSE(process_has_library(getppid()));  // ctest, or a shell
  EXPECT_FALSE(process_has_library(-1));         // no such process: unreadable, so not watched
}

}  // namespace
