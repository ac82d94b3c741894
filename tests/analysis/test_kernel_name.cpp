#include "analysis/kernel_name.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace asynccheck {
namespace {

TEST(KernelName, EqualNamesAreOneStringAndTheEmptyNameIsNone) {
  const std::string a = "_Z12empty_kernelv";
  const KernelName x(a), y(std::string("_Z12empty_kernelv")), z("_Z6kernelPfi");
  EXPECT_EQ(x, y);
  EXPECT_EQ(&x.str(), &y.str());
  EXPECT_FALSE(x == z);
  EXPECT_EQ(x.str(), a);
  EXPECT_EQ(z.str(), "_Z6kernelPfi");
  EXPECT_TRUE(KernelName().empty());
  EXPECT_TRUE(KernelName("").empty());
  EXPECT_TRUE(KernelName(static_cast<const char*>(nullptr)).empty());
  EXPECT_EQ(KernelName().str(), "");
  EXPECT_EQ(KernelName(), KernelName(""));
  KernelName cleared = x;
  cleared.clear();
  EXPECT_TRUE(cleared.empty());
}

// CUPTI's memory for a name may hold another one later: the same address with other text is another name.
TEST(KernelName, TheSameMemoryWithOtherTextIsAnotherName) {
  char text[64];
  std::strcpy(text, "_Z5firstv");
  const KernelName first(text);
  std::strcpy(text, "_Z6secondv");
  const KernelName second(text);
  EXPECT_EQ(first.str(), "_Z5firstv");
  EXPECT_EQ(second.str(), "_Z6secondv");
  EXPECT_FALSE(first == second);
  std::strcpy(text, "_Z5firstv");
  EXPECT_EQ(KernelName(text), first);
}

TEST(KernelName, ThreadsInterningTheSameNamesGetTheSameOnes) {
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("_Z" + std::to_string(i) + "kernel_with_a_name_past_the_inline_bufferv");
  std::vector<std::vector<KernelName>> got(4);
  std::vector<std::thread> threads;
  for (auto& mine : got) {
    threads.emplace_back([&names, &mine] {
      for (int round = 0; round < 50; ++round) {
        for (const std::string& n : names) mine.push_back(KernelName(n));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& mine : got) {
    ASSERT_EQ(mine.size(), got[0].size());
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i], got[0][i]);
      EXPECT_EQ(mine[i].str(), names[i % names.size()]);
    }
  }
}

}  // namespace
}  // namespace asynccheck
