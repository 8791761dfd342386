; Synthetic benchmark 9: a branch that is taken and depends on a task in flight (BR):
; it waits for the vector_max that writes the block it reads, watching the CDB. The max
; of 64 random 16-bit samples is positive, so GE against r1 = 0 holds.
        mov   0 0 r1 0 0 0 0
        real_fir    10 1 40 1 0 0 0 0
        vector_max  40 1 41 1 1 0 0 0
        if    41 r1 skip 0 0 0 e 0         ; K = memory | speculate | GE
        fft_256     18 8 60 8 2 0 0 0
        dct_64      12 1 42 1 3 0 0 0
        correlation 20 2 43 1 4 0 0 0
        complex_fir 22 2 44 2 5 0 0 0
skip:   vector_add  24 2 46 1 6 0 0 0
        real_fir    26 1 47 1 7 0 0 0
