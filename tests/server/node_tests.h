// The Node tests' one setup: tests/server/node/setup.sh copies the pinned package.json,
// package-lock.json and scripts of a source folder (tests/server/node: the API clients;
// tests/server/web: puppeteer-core) beside the hearth binary and installs them (npm ci,
// only when the manifests changed). A failed install is a test failure;
// HEARTH_SKIP_NODE_TESTS=1 (no Node, no registry, TSan) skips knowingly with a loud line.
// Used by serve_acceptance_test.cpp, agent_clients_test.cpp and web_ui_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "serve_fixture.h"

namespace hearth::server::testing {

inline bool skip_node_tests() {
  const char* v = std::getenv("HEARTH_SKIP_NODE_TESTS");
  return v != nullptr && std::string(v) == "1";
}

// Where the scripts of tests/server/`src` run: build/`dest`, beside the hearth binary.
inline std::filesystem::path node_tests_dir(const std::string& dest = "node-tests") {
  return std::filesystem::path(HEARTH_CLI_PATH).parent_path() / dest;
}

// Runs setup.sh for tests/server/`src` into node_tests_dir(`dest`); returns its exit
// status, `out` its output.
inline int setup_node_tests(std::string& out, const std::string& dest = "node-tests",
                            const std::string& src = "node") {
  // __FILE__ is absolute under CMake's Makefiles but relative to the build directory
  // (where the hearth binary lies) under Ninja.
  std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
  if (here.is_relative()) here = std::filesystem::path(HEARTH_CLI_PATH).parent_path() / here;
  return run_shell("bash '" + (here / "node" / "setup.sh").string() + "' '" +
                       node_tests_dir(dest).string() + "' '" + (here / src).string() + "'",
                   &out);
}

}  // namespace hearth::server::testing

// In a test body: installs the pinned packages of tests/server/`src` into build/`dest`,
// or skips (HEARTH_SKIP_NODE_TESTS=1) or fails naming `what`.
#define HEARTH_REQUIRE_NODE_PACKAGES(what, dest, src)                                         \
  do {                                                                                        \
    std::string setup_out_;                                                                   \
    const int setup_rc_ = ::hearth::server::testing::setup_node_tests(setup_out_, dest, src); \
    if (setup_rc_ != 0) {                                                                     \
      if (::hearth::server::testing::skip_node_tests()) {                                     \
        std::fprintf(stderr,                                                                  \
                     "\n*** SKIPPED: %s (HEARTH_SKIP_NODE_TESTS=1); the pinned npm packages " \
                     "could not be installed:\n%s\n",                                         \
                     what, setup_out_.substr(0, 800).c_str());                                \
        GTEST_SKIP() << "HEARTH_SKIP_NODE_TESTS=1: " << what << " NOT tested";                \
      }                                                                                       \
      FAIL() << "tests/server/node/setup.sh (npm ci of the pinned packages) failed with "     \
                "status "                                                                     \
             << setup_rc_ << "; install Node.js and npm (make deps) or set "                  \
             << "HEARTH_SKIP_NODE_TESTS=1 to skip knowingly:\n"                               \
             << setup_out_.substr(0, 2000);                                                   \
    }                                                                                         \
  } while (0)

// The API clients of tests/server/node, in build/node-tests.
#define HEARTH_REQUIRE_NODE_TESTS(what) HEARTH_REQUIRE_NODE_PACKAGES(what, "node-tests", "node")
