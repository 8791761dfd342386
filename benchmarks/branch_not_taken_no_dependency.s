; Synthetic benchmark 8: a memory-read branch that is not taken (MR). Speculated not
; taken, the tasks behind it run while the branch reads memory, and are kept.
        mov   ffff 0 r1 0 0 0 0
        real_fir    10 1 40 1 0 0 0 0
        iir         11 1 41 1 1 0 0 0
        if    300 r1 skip 0 0 0 c 0        ; K = memory | speculate | EQ: never equal
        fft_256     18 8 60 8 2 0 0 0
        dct_64      12 1 42 1 3 0 0 0
        correlation 20 2 43 1 4 0 0 0
        complex_fir 22 2 44 2 5 0 0 0
skip:   vector_add  24 2 46 1 6 0 0 0
        real_fir    26 1 47 1 7 0 0 0
