; Synthetic benchmark 7: a memory-read branch that is taken, on a block no task writes
; (MR). The branch is speculated not taken, so the four tasks behind it start and are
; squashed or aborted when it resolves. Samples are 16-bit, so the word read is never
; 0xffff and NEQ holds.
        mov   ffff 0 r1 0 0 0 0
        real_fir    10 1 40 1 0 0 0 0
        iir         11 1 41 1 1 0 0 0
        if    300 r1 skip 0 0 0 d 0        ; K = memory | speculate | NEQ
        fft_256     18 8 60 8 2 0 0 0
        dct_64      12 1 42 1 3 0 0 0
        correlation 20 2 43 1 4 0 0 0
        complex_fir 22 2 44 2 5 0 0 0
skip:   vector_add  24 2 46 1 6 0 0 0
        real_fir    26 1 47 1 7 0 0 0
