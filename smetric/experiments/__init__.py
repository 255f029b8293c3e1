"""smetric.experiments"""
