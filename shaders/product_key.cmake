# Product-key memories: PK_SCORE (shaders/pk_score.comp; tile shape by specialization constants).
mnemo_shader(pk_score pk_score.comp)
