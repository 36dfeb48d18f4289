#include "inspect_command.h"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "inspect")
        return atlas::runInspect({args.begin() + 1, args.end()});
    if (!args.empty() && (args.front() == "-h" || args.front() == "--help")) {
        std::cout << "usage: ckpt-atlas [inspect] [SOURCE] [options]   (ckpt-atlas inspect --help)\n";
        return 0;
    }
    // Until the desktop window exists, the app prints the report of what it would open.
    return atlas::runInspect(args);
}
