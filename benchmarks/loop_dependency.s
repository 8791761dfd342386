; Synthetic benchmark 6: a loop whose every iteration depends on tasks outside it: an
; FFT and a correlation before the loop produce the blocks each iteration reads.
        fft_256     18 8 60 8 0 0 0 0
        correlation 20 2 70 1 1 0 0 0
        mov   100 0 r1 0 0 0 0
        mov   2   0 r2 0 0 0 0
        mov   1   0 r3 0 0 0 0
        mov   60  0 r8 0 0 0 0        ; K bit 0 makes A a register too: the FFT's output
        mov   70  0 r9 0 0 0 0        ; and the correlation's
        lbeg  8   r4 0 0 0 0 0
        mul   r4 r2 r5 0 0 0 0
        add   r5 r1 r6 0 0 0 0        ; r6 = this iteration's output block
        add   r6 r3 r7 0 0 0 0
        vector_dot r8 2 r6 1 2 0 1 0   ; reads the FFT's output
        vector_add r9 1 r7 1 3 0 1 0   ; reads the correlation's output
        lend  0 r4 0 0 0 0 0
