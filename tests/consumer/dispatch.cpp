// The dispatcher through the installed flashtune::attention: which config attention_forward would
// run for one workload on a GPU named by its spec, and why. Choosing needs no device.
// Usage: consumer_dispatch GPU B N d      Prints "<config> <why> (profile <path or none>)".
#include <cstdio>
#include <exception>
#include <string>

#include <flashtune/dispatch/attention_forward.h>
#include <flashtune/model/data_dir.h>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: consumer_dispatch GPU B N d\n");
    return 2;
  }
  try {
    flashtune::model::set_data_dir(FLASHTUNE_CONSUMER_DATA_DIR);
    const flashtune::Dispatcher dispatcher = flashtune::Dispatcher::from_files("", argv[1]);
    flashtune::Workload w;
    w.B = std::stoll(argv[2]);
    w.N = std::stoll(argv[3]);
    w.d = std::stoi(argv[4]);
    const flashtune::Choice c = dispatcher.choose(w);
    std::printf("%s %s (profile %s)\n", c.config.name().c_str(), c.why().c_str(),
                dispatcher.profile() ? dispatcher.profile()->path.c_str() : "none");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_dispatch: %s\n", e.what());
    return 1;
  }
}
