"""smetric.cluster"""
