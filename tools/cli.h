// The segtrain command line: one function per command, registered in cli.cpp.
#pragma once

#include <string>
#include <vector>

namespace seg::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);  // args after the command name; returns the exit code
};

const std::vector<Command>& commands();
// Runs `segtrain <args...>`; errors escape as seg::Error (main maps them to exit codes).
int run(const Args& args);

bool wants_help(const Args& args);  // -h / --help anywhere

int cmd_info(const Args& args);
int cmd_demo(const Args& args);
int cmd_data(const Args& args);
int cmd_train(const Args& args);
int cmd_eval(const Args& args);
int cmd_predict(const Args& args);
int cmd_bench(const Args& args);
int cmd_export(const Args& args);

}  // namespace seg::cli
