; Audio compression, Algorithm 1 of the HTS paper: correlate the audio; above a
; threshold compress each band in the time domain (three FIR filters), otherwise in the
; frequency domain (FFT, three dot products, inverse FFT).
;
; Parameters (hts.benchmarks.audio_compression rewrites the lines marked @):
;   bands      loop count of both paths (8 here)
;   threshold  the branch jumps to the frequency domain when the correlation peak
;              (Q15, 0..7fff) is <= r9. 0 keeps the time domain: the branch is not taken
;              and the speculation (not taken) is right. 7fff takes the frequency domain.
;
; Band i works in the 32 blocks from 20*i: input at +0 (8 blocks of complex samples),
; spectrum at +8, dot products at +10..+12, inverse FFT at +18. The time domain uses
; +0 -> +8 -> +a -> +c.
        mov   0    0 r1  0 0 0 0        ; r1 = base of band 0
        mov   20   0 r2  0 0 0 0        ; r2 = blocks per band
        mov   1    0 r3  0 0 0 0        ; constants 1, 2, 8
        mov   2    0 r10 0 0 0 0
        mov   8    0 r0  0 0 0 0
        mov   0    0 r9  0 0 0 0        ; @threshold
        correlation 0 2 800 1 0 0 0 0    ; word 0 of block 0x800: peak normalised correlation
        if    800 r9 frequency 0 0 0 f 0 ; K = memory | speculate | LE
time:   lbeg  8 r4 0 0 0 0 0            ; @bands
        mul   r4 r2 r5  0 0 0 0
        add   r5 r1 r6  0 0 0 0         ; r6 = band input
        add   r6 r0 r7  0 0 0 0         ; r7 = +8
        add   r7 r10 r8 0 0 0 0         ; r8 = +a
        add   r8 r10 r11 0 0 0 0        ; r11 = +c
        real_fir r6 1 r7 1  1 0 1 0      ; band-pass filters: metadata BAND = 0, 1, 2
        real_fir r7 1 r8 1  2 0 1 1
        real_fir r8 1 r11 1 3 0 1 2
        lend  0 r4 0 0 0 0 0
        jump  0 0 done 0 0 0 0
frequency:
        lbeg  8 r4 0 0 0 0 0            ; @bands
        mul   r4 r2 r5  0 0 0 0
        add   r5 r1 r6  0 0 0 0         ; r6 = band input (8 blocks)
        add   r6 r0 r7  0 0 0 0         ; r7 = spectrum (+8)
        add   r7 r10 r8 0 0 0 0         ; r8, r11: second and third dot operands
        add   r8 r10 r11 0 0 0 0
        add   r7 r0 r12 0 0 0 0         ; r12..r14 = dot products (+10, +11, +12)
        add   r12 r3 r13 0 0 0 0
        add   r13 r3 r14 0 0 0 0
        add   r12 r0 r15 0 0 0 0        ; r15 = inverse FFT (+18)
        fft_256    r6 8 r7 8   4 0 1 0
        vector_dot r7 2 r12 1  5 0 1 0
        vector_dot r8 2 r13 1  6 0 1 0
        vector_dot r11 2 r14 1 7 0 1 0
        fft_256    r7 8 r15 8  8 0 1 1   ; metadata INVERSE = 1
        lend  0 r4 0 0 0 0 0
done:
