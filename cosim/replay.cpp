// The C++-only reference of `python -m hts.cosim.speed`: a recorded co-simulation run
// replayed on the Verilated model of the cocotb build, with no Python and no cocotb.
//
// Usage: hts_replay STIMULUS. The file (written by hts/cosim/replay.py) holds the
// wrapper's name, the first and last simulation steps of the timed run, then one input
// write a line: step, port, value in hex. The writes go through VPI, as cocotb's do; the
// clock runs in the model (--timing). Because the run is deterministic, the recorded
// inputs, the answers the testbench computed from the RTL's outputs included, reproduce
// it. It prints "wake CYCLE EVENTS" for every falling edge of the run with `wake` high
// (the testbench looked at the same ones), then "seconds S", the wall time of the run.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "Vtop.h"
#include "verilated.h"
#include "verilated_vpi.h"

struct Write {
    uint64_t step;
    vpiHandle port;
    std::string hex;
};

static vpiHandle handle(const std::string& name) {
    vpiHandle port = vpi_handle_by_name(const_cast<PLI_BYTE8*>(name.c_str()), nullptr);
    if (!port) {
        fprintf(stderr, "hts_replay: no signal %s\n", name.c_str());
        exit(2);
    }
    return port;
}

static void put(const Write& write) {
    s_vpi_value value{vpiHexStrVal};
    value.value.str = const_cast<PLI_BYTE8*>(write.hex.c_str());
    vpi_put_value(write.port, &value, nullptr, vpiNoDelay);
}

static const char* hex(vpiHandle port) {
    s_vpi_value value{vpiHexStrVal};
    vpi_get_value(port, &value);
    return value.value.str;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: hts_replay STIMULUS\n");
        return 2;
    }
    std::ifstream file(argv[1]);
    std::string top_name, port, value;
    uint64_t start, end, step;
    file >> top_name >> start >> end;

    auto context = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vtop>(context.get(), "");
    std::vector<Write> writes;
    while (file >> step >> port >> value) writes.push_back({step, handle(top_name + "." + port), value});
    vpiHandle events = handle(top_name + ".events");

    size_t next = 0;
    bool clk = top->clk;
    auto started = std::chrono::steady_clock::now();
    for (uint64_t now = 0;;) {
        context->time(now);
        top->eval();
        if (next < writes.size() && writes[next].step == now) {
            while (next < writes.size() && writes[next].step == now) put(writes[next++]);
            top->eval();
        }
        if (now <= start) started = std::chrono::steady_clock::now();  // the timed run begins at `start`
        bool fell = clk && !top->clk;
        clk = top->clk;
        if (fell && now >= start && top->wake)
            printf("wake %llu %s\n", static_cast<unsigned long long>(top->cycle), hex(events));
        if (now >= end || context->gotFinish()) break;
        uint64_t slot = top->eventsPending() ? top->nextTimeSlot() : UINT64_MAX;
        now = std::min(slot, next < writes.size() ? writes[next].step : UINT64_MAX);
    }
    std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - started;
    printf("seconds %.9f\n", seconds.count());
    top->final();
    return 0;
}
