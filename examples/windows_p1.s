; Process 1 of examples/windows.yaml, whose window is [0x100, 0x200). The indirect task's
; output, block 0x30, belongs to process 0: process 1 faults there and stops.
        real_fir   110 1 120 1 0 1 0 0
        mov        120 0 r2 0 0 1 0
        mov        30  0 r1 0 0 1 0
        vector_add r2 1 r1 1 1 1 1 0     ; output region from r1: outside the window
        real_fir   120 1 130 1 2 1 0 0   ; never runs
